package rjqweb

import (
	"context"
	"log/slog"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
)

// followRuns feeds m from the table's changefeed until ctx ends, whichever process or
// language runs the jobs: a job that becomes active is a claim, and a job that leaves
// active is the end of a run, with the duration its outcome's log entry records (both
// libraries write it) or else dateFinished − dateStarted. A feed that fails is reopened
// after a second (changes meanwhile are not counted), and its error logged whenever it
// differs from the last one.
func followRuns(ctx context.Context, s r.QueryExecutor, table r.Term, queueName string, m *metrics.Collector, log *slog.Logger) {
	var last string
	for ctx.Err() == nil {
		err := changefeed.Follow(ctx, s, table, r.RunOpts{}, nil, func(ch changefeed.Change) { countRun(queueName, ch, m) })
		if err != nil && ctx.Err() == nil && err.Error() != last {
			last = err.Error()
			log.Error("rjqweb: the changefeed of the run metrics failed, retrying every second", "queue", queueName, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// countRun reports one change to m.
func countRun(queueName string, ch changefeed.Change, m *metrics.Collector) {
	was, _ := ch.Old["status"].(string)
	now, _ := ch.New["status"].(string)
	switch {
	case ch.New == nil || was == now:
	case now == string(job.Active):
		m.JobsClaimed(queueName, 1)
	case was == string(job.Active):
		name, _ := ch.New["name"].(string)
		if id, _ := ch.New["id"].(string); name == id {
			name = "" // the default name: see queue.MetricName
		}
		m.RunEndedNamed(queueName, name, job.Status(now), runDuration(ch.New))
	}
}

// runDuration is the duration of the run that ended in doc.
func runDuration(doc map[string]any) time.Duration {
	if log, ok := doc["log"].([]any); ok && len(log) > 0 {
		if e, ok := log[len(log)-1].(map[string]any); ok {
			if ms, ok := e["duration"].(float64); ok && ms >= 0 {
				return time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	started, ok1 := doc["dateStarted"].(time.Time)
	finished, ok2 := doc["dateFinished"].(time.Time)
	if ok1 && ok2 && finished.After(started) {
		return finished.Sub(started)
	}
	return 0
}
