package rjqweb

import (
	"context"
	"log/slog"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
)

// followRuns feeds m from the table's changefeed until ctx ends, whichever process or
// language runs the jobs: a job that becomes active is a claim, and a job that leaves
// active is the end of a run, with the job's name and group and the duration its outcome's log entry records (both
// libraries write it) or else dateFinished − dateStarted, and a job cancelled with the log
// message job.MessageDeadlinePassed is one whose start deadline passed. A feed that fails is reopened
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

// countRun reports one change to m: a claim, the end of a run (with the job's name and
// group), or a job cancelled because its start deadline passed.
func countRun(queueName string, ch changefeed.Change, m *metrics.Collector) {
	was, _ := ch.Old[docfmt.Status].(string)
	now, _ := ch.New[docfmt.Status].(string)
	switch {
	case ch.New == nil || was == now:
	case now == string(job.Active):
		m.JobsClaimed(queueName, 1)
	case was == string(job.Active):
		name, _ := ch.New[docfmt.Name].(string)
		if id, _ := ch.New[docfmt.ID].(string); name == id {
			name = "" // the default name: see queue.MetricName
		}
		group, _ := ch.New[docfmt.Group].(string)
		m.RunEndedGrouped(queueName, name, group, job.Status(now), runDuration(ch.New))
	case now == string(job.Cancelled) && lastLogMessage(ch.New) == job.MessageDeadlinePassed:
		m.JobsExpired(queueName, 1)
	}
}

// lastLogMessage is the message of the last entry of doc's log, "" when it has none.
func lastLogMessage(doc map[string]any) string {
	if log, ok := doc[docfmt.Log].([]any); ok && len(log) > 0 {
		if e, ok := log[len(log)-1].(map[string]any); ok {
			msg, _ := e["message"].(string)
			return msg
		}
	}
	return ""
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
