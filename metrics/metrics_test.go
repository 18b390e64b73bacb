package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func scrape(c *Collector) string {
	var b strings.Builder
	c.WriteTo(context.Background(), &b)
	return b.String()
}

func TestCountersAndHistogram(t *testing.T) {
	c := New()
	c.JobsClaimed("mail", 3)
	c.JobsClaimed("mail", 2)
	c.RunEnded("mail", job.Completed, 3*time.Millisecond)
	c.RunEnded("mail", job.Completed, 40*time.Millisecond)
	c.RunEnded("mail", job.Failed, 2*time.Second)
	c.RunEnded("mail", job.Terminated, time.Hour)
	c.JobsExpired("mail", 2)
	out := scrape(c)
	for _, want := range []string{
		"# TYPE rjq_jobs_deadline_passed_total counter\n",
		`rjq_jobs_deadline_passed_total{queue="mail"} 2`,
		"# TYPE rjq_jobs_claimed_total counter\n",
		`rjq_jobs_claimed_total{queue="mail"} 5`,
		`rjq_runs_total{queue="mail",status="completed"} 2`,
		`rjq_runs_total{queue="mail",status="failed"} 1`,
		`rjq_runs_total{queue="mail",status="terminated"} 1`,
		"# TYPE rjq_run_duration_seconds histogram\n",
		`rjq_run_duration_seconds_bucket{queue="mail",le="0.005"} 1`,
		`rjq_run_duration_seconds_bucket{queue="mail",le="0.05"} 2`,
		`rjq_run_duration_seconds_bucket{queue="mail",le="2.5"} 3`,
		`rjq_run_duration_seconds_bucket{queue="mail",le="300"} 3`,
		`rjq_run_duration_seconds_bucket{queue="mail",le="+Inf"} 4`,
		`rjq_run_duration_seconds_count{queue="mail"} 4`,
		`rjq_run_duration_seconds_sum{queue="mail"} 3602.043`,
	} {
		assert.Contains(t, out, want)
	}
}

func TestBucketBoundIsInclusive(t *testing.T) {
	c := New()
	c.RunEnded("q", job.Completed, 10*time.Millisecond)
	out := scrape(c)
	assert.Contains(t, out, `rjq_run_duration_seconds_bucket{queue="q",le="0.005"} 0`)
	assert.Contains(t, out, `rjq_run_duration_seconds_bucket{queue="q",le="0.01"} 1`, "le means less than or equal")
}

func TestLabelEscaping(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b`, `"a\"b"`},
		{`a\b`, `"a\\b"`},
		{"a\nb", `"a\nb"`},
	} {
		assert.Equal(t, tt.want, label(tt.in), tt.in)
	}
}

func TestEmptyCollectorWritesHeadersOnly(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(scrape(New())), "\n") {
		assert.True(t, strings.HasPrefix(line, "# "), line)
	}
}

func TestNameLabelsAreBounded(t *testing.T) {
	c := NewWith(Options{NameLabels: 2})
	c.RunEndedNamed("mail", "welcome", job.Completed, time.Millisecond)
	c.RunEndedNamed("mail", "welcome", job.Failed, time.Millisecond)
	c.RunEndedNamed("mail", "digest", job.Completed, time.Millisecond)
	c.RunEndedNamed("mail", "reset", job.Completed, time.Millisecond)   // a third name: other
	c.RunEndedNamed("mail", "invoice", job.Completed, time.Millisecond) // and a fourth
	c.RunEndedNamed("mail", "", job.Completed, time.Millisecond)        // no name of its own
	c.RunEnded("mail", job.Completed, time.Millisecond)                 // from a plain Metrics caller
	out := scrape(c)
	for _, want := range []string{
		`rjq_runs_total{queue="mail",name="welcome",status="completed"} 1`,
		`rjq_runs_total{queue="mail",name="welcome",status="failed"} 1`,
		`rjq_runs_total{queue="mail",name="digest",status="completed"} 1`,
		`rjq_runs_total{queue="mail",name="other",status="completed"} 2`,
		`rjq_runs_total{queue="mail",name="",status="completed"} 2`,
		`rjq_run_duration_seconds_count{queue="mail",name="welcome"} 2`,
		`rjq_run_duration_seconds_count{queue="mail",name="other"} 2`,
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, `name="reset"`)
	assert.NotContains(t, out, `name="invoice"`)

	plain := New()
	plain.RunEndedNamed("mail", "welcome", job.Completed, time.Millisecond)
	assert.Contains(t, scrape(plain), `rjq_runs_total{queue="mail",status="completed"} 1`, "no name label unless asked")
}

func TestMetricNameLeavesOutNamesThatAreIDs(t *testing.T) {
	j := job.New(nil, job.Options{})
	assert.Equal(t, "", queue.MetricName(j), "the default name is the id")
	j.SetName("welcome")
	assert.Equal(t, "welcome", queue.MetricName(j))
}
