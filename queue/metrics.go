package queue

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Metrics receives the measurements of a queue's processing (Options.Metrics), for a
// metrics system: how many jobs it claims and how each run ends. The queue calls it from
// its processing loop, so its methods must be safe for concurrent use (several queues may
// share one) and return quickly. Queue depth is not pushed: read it with Summary when the
// metrics are scraped.
type Metrics interface {
	// JobsClaimed is called after a claim made n jobs active for the named queue.
	JobsClaimed(queue string, n int)
	// RunEnded is called once per run whose outcome was written: the status the job moved
	// to (completed; failed for a retry; waiting for a repeat or a pass-back; cancelled by
	// its handler; terminated) and how long the run took.
	RunEnded(queue string, status job.Status, runTime time.Duration)
}

// NamedMetrics is a Metrics that also takes the name of the job whose run ended, for a
// per-name series: the queue calls RunEndedNamed instead of RunEnded when
// Options.Metrics implements it. name is empty for a job whose name is its id (the
// default), so that names stay few.
type NamedMetrics interface {
	Metrics
	RunEndedNamed(queue, name string, status job.Status, runTime time.Duration)
}

// GroupMetrics is a Metrics that also takes the name and the group of the job whose run
// ended, for per-name and per-group series: the queue calls RunEndedGrouped instead of
// RunEndedNamed and RunEnded when Options.Metrics implements it. name is as
// NamedMetrics's (MetricName); group is the job's group (job.Job.Group), "" for a job
// without one.
type GroupMetrics interface {
	Metrics
	RunEndedGrouped(queue, name, group string, status job.Status, runTime time.Duration)
}

// ExpiryMetrics is a Metrics that also counts the jobs cancelled because their start
// deadline passed (job.SetDeadline): the queue calls JobsExpired when Options.Metrics
// implements it, from the Queue Master or the worker that cancelled them.
type ExpiryMetrics interface {
	Metrics
	JobsExpired(queue string, n int)
}

// MetricName is the name a NamedMetrics is given for a job: its name, or "" when that is
// its id (the default).
func MetricName(j *job.Job) string { return engine.MetricName(j) }
