package queue

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/broker"
	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Queue is a job queue backed by one RethinkDB table. It is safe for concurrent use.
type Queue struct {
	// e is the running queue, which does the work; Queue adds the event channels, the
	// handler's middleware and the exported errors.
	e          *engine.Queue
	events     *broker.Broker[Event]
	middleware []Middleware
}

// New connects to RethinkDB and returns a queue. nil options mean the defaults. It dials
// now and fails at once, with an error wrapping ErrConnect that names the address, when no
// server answers; the database, table and indexes are then asserted in the background,
// after the init delay (see Options.DatabaseInitDelay). Every method waits for that; Ready
// waits for it alone.
func New(ctx context.Context, cxn *ConnectOptions, opts *Options) (*Queue, error) {
	cfg, middleware, err := resolve(cxn, opts)
	if err != nil {
		return nil, publicErr(err)
	}
	q := &Queue{middleware: middleware}
	q.events = broker.New[Event](cfg.EventBuffer, func(total uint64) {
		q.e.Log().Warn("an Events reader is behind: events dropped; read faster or raise Options.EventBuffer",
			"droppedByThisReader", total)
	})
	if q.e, err = engine.New(ctx, cfg, outlet{q.events}); err != nil {
		return nil, publicErr(err)
	}
	q.e.Start()
	return q, nil
}

// Ready waits until the queue's database, table and indexes are in place, and returns the
// error that prevented it, if any.
//
// It returns ctx's error when ctx has ended, even if the queue is ready, and ErrStopped
// once the queue is stopped.
func (q *Queue) Ready(ctx context.Context) error {
	return publicErr(q.e.Ready(ctx))
}

// Name returns the queue's name, which is its table's name.
func (q *Queue) Name() string { return q.e.Config().Name }

// ID returns the queue's id, "hostname:db:name:pid:uuid", written into every job it changes.
func (q *Queue) ID() string { return q.e.ID() }

// Host returns the RethinkDB host the queue was given.
func (q *Queue) Host() string { return q.e.Config().Host }

// Port returns the RethinkDB port the queue was given.
func (q *Queue) Port() int { return q.e.Config().Port }

// DB returns the queue's database name.
func (q *Queue) DB() string { return q.e.Config().DB }

// ChangeFeed reports whether the queue follows the table's changefeed.
func (q *Queue) ChangeFeed() bool { return q.e.Config().ChangeFeed }

// Master reports whether the queue is a Queue Master.
func (q *Queue) Master() bool { return q.e.Config().Master() }

// MasterInterval returns the review interval; negative when the queue is not a master.
func (q *Queue) MasterInterval() time.Duration { return q.e.Config().MasterInterval }

// LimitJobLogs returns how many log entries a job keeps; negative for no limit.
func (q *Queue) LimitJobLogs() int { return q.e.Config().LimitJobLogs }

// RemoveFinishedJobs returns how long finished jobs are kept: KeepFinishedJobs (negative),
// RemoveFinishedJobsImmediately, or a retention period.
func (q *Queue) RemoveFinishedJobs() time.Duration { return q.e.Config().RemoveFinished }

// Concurrency returns how many jobs the queue runs at once.
func (q *Queue) Concurrency() int {
	return q.e.Concurrency()
}

// SetConcurrency changes how many jobs the queue runs at once; n must be at least 1.
func (q *Queue) SetConcurrency(n int) error {
	return publicErr(q.e.SetConcurrency(n))
}

// JobOptions returns the options CreateJob gives new jobs.
func (q *Queue) JobOptions() job.Options {
	return q.e.JobOptions()
}

// SetJobOptions replaces the options CreateJob gives new jobs; a zero field means its
// default (see job.Options: job.NoRetries for none). Invalid options are refused with an
// error and change nothing.
func (q *Queue) SetJobOptions(opts job.Options) error {
	return publicErr(q.e.SetJobOptions(opts))
}
