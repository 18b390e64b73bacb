package rjqweb

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/exposition"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
)

// A change of the table counts as what it is: a claim, the end of a run with the job's
// name and group, a job cancelled for its deadline, or nothing.
func TestCountRunReadsEachChange(t *testing.T) {
	doc := func(status, name, group, message string) map[string]any {
		d := map[string]any{"id": "id-1", "name": name, "status": status,
			"log": []any{map[string]any{"message": message, "duration": float64(20)}}}
		if group != "" {
			d["rjqGroup"] = group
		}
		return d
	}
	for _, tt := range []struct {
		name     string
		old, new map[string]any
		want     []string // samples the scrape holds, beside the ones of every scrape
	}{
		{"a claim", doc("waiting", "mail", "", ""), doc("active", "mail", "", ""),
			[]string{`rjq_jobs_claimed_total{queue="q"} 1`}},
		{"a run's end", doc("active", "mail", "acme", ""), doc("completed", "mail", "acme", "Job completed"),
			[]string{`rjq_runs_total{queue="q",name="mail",group="acme",status="completed"} 1`, `rjq_run_duration_seconds_bucket{queue="q",name="mail",group="acme",le="0.025"} 1`}},
		{"a run's end of a job named by its id and without a group", doc("active", "id-1", "", ""), doc("failed", "id-1", "", "Job failed"),
			[]string{`rjq_runs_total{queue="q",name="",group="",status="failed"} 1`}},
		{"a deadline passed", doc("waiting", "mail", "", ""), doc("cancelled", "mail", "", job.MessageDeadlinePassed),
			[]string{`rjq_jobs_deadline_passed_total{queue="q"} 1`}},
		{"a cancel by hand", doc("waiting", "mail", "", ""), doc("cancelled", "mail", "", "cancelled by an operator"), nil},
		{"an add", nil, doc("waiting", "mail", "", ""), nil},
		{"a removal", doc("completed", "mail", "", ""), nil, nil},
		{"a progress", doc("active", "mail", "", ""), doc("active", "mail", "", ""), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.NewWith(metrics.Options{NameLabels: 5, GroupLabels: 5, AllWorkers: true})
			countRun("q", changefeed.Change{Old: tt.old, New: tt.new}, m)
			var b strings.Builder
			m.WriteTo(context.Background(), &b)
			samples, err := exposition.Check(b.String())
			require.NoError(t, err)
			for _, want := range tt.want {
				assert.Contains(t, b.String(), want+"\n")
			}
			if tt.want == nil {
				assert.Empty(t, samples, "no series")
			}
		})
	}
}
