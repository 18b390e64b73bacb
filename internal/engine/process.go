package engine

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Process is queue.Queue.Process, whose doc says what it does.
func (q *Queue) Process(handler processor.Handler) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return ErrStopped
	}
	if q.proc != nil {
		return ErrProcessTwice
	}
	q.proc = processor.New(q.processorConfig(handler))
	var review func()
	if !q.cfg.Master() {
		// Recover what crashed workers left behind before taking new work, as the original
		// does; a master reviews on its own schedule.
		review = func() {
			if _, err := q.review(q.bg.Context(), false); err != nil && q.bg.Context().Err() == nil {
				q.log.Warn("review before processing failed", "err", err)
			}
		}
	}
	q.proc.Start(review)
	return nil
}

// processorConfig is what the processor needs of this queue.
func (q *Queue) processorConfig(handler processor.Handler) processor.Config {
	cfg := processor.Config{
		Store:        q.db,
		Jobs:         q.store(),
		Handler:      handler,
		QueueID:      q.id,
		Name:         q.cfg.Name,
		LimitJobLogs: q.cfg.LimitJobLogs,
		Concurrency:  q.Concurrency,
		Claiming: func() bool {
			return !q.Paused() && q.bg.Context().Err() == nil
		},
		Ready: q.ready0,
		Feed:  q.cfg.ChangeFeed,
		HandlerContext: func() context.Context {
			return context.WithValue(q.cfg.BaseContext(), handlerKey{}, q)
		},
		LeaseEnd:       q.leaseEnd,
		RemoveFinished: q.cfg.RemovesImmediately(),
		Limits:         q.limitings,
		PassBack: func(ctx context.Context, j *job.Job, owner int) error {
			e := rdb.NewLog(j, q.id, nil, job.MessageUpdated, job.Information, "")
			return q.updateJob(ctx, j, e, owner)
		},
		Stalled:  q.stalled,
		Children: q.childrenToFollow,
		Hooks: processor.Hooks{
			Emit: func(e processor.Event) {
				q.emit(Event{Type: string(e.Type), JobID: e.JobID, Err: e.Err, IsRepeating: e.IsRepeating, Reason: e.Reason})
				q.runFinished(e)
			},
			Claimed:  q.claimedMetric,
			RunEnded: q.runMetric,
			Removed:  q.noteRemovals,
			Expired:  q.expiredMetric,
		},
		Log: q.log,
	}
	if q.cfg.heartbeats() {
		cfg.Heartbeat = q.cfg.Heartbeat
		cfg.AssertWorkers = func(ctx context.Context) error { return q.assertSide(ctx, rdb.WorkersSuffix) }
	}
	if f := q.cfg.RetryBackoff; f != nil {
		cfg.RetryDelay = rdb.CustomDelay(f)
	}
	if f := q.cfg.OnTerminated; f != nil {
		cfg.Hooks.Terminated = f
	}
	return cfg
}

// handlerKey marks the context of a handler: its value is the handler's queue.
type handlerKey struct{}

// inHandler reports whether ctx is (derived from) the context of one of q's handlers. A
// handler that stops or pauses its own queue must not be waited for by that call.
func (q *Queue) inHandler(ctx context.Context) bool {
	owner, _ := ctx.Value(handlerKey{}).(*Queue)
	return owner == q
}

// processor returns the queue's processor, nil before Process.
func (q *Queue) processor() *processor.Processor {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.proc
}

// wakeProcessing asks the processor, if any, to claim: jobs were added or enabled, or a
// slot was freed.
func (q *Queue) wakeProcessing() {
	if p := q.processor(); p != nil {
		p.Wake()
	}
}

// Running is queue.Queue.Running, whose doc says what it does.
func (q *Queue) Running() int {
	if p := q.processor(); p != nil {
		return p.Running()
	}
	return 0
}

// runTime is how long the run of j that ended at at took.
func runTime(j job.Job, at time.Time) time.Duration {
	return max(at.Sub(j.DateStarted), 0)
}
