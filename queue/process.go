package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Handler processes one job and returns its outcome, the Go form of the original's
// next(err, result):
//   - (result, nil): the job is completed (or waits for its next repeat); result is the data
//     of the completion log entry;
//   - (nil, err): the job failed and is retried per its RetryMax and RetryDelay, else
//     terminated (or waits for its next repeat);
//   - an error for which errors.Is(err, job.ErrCancel) holds (make one with job.Cancel):
//     the job is cancelled with that reason;
//   - (j, nil), returning the job it was given: the job is passed back, saved as it is
//     with status active turned into waiting.
//
// ctx is cancelled when the job is cancelled or taken away anywhere (cause
// job.ErrCancelled: cancelled, removed, or failed by a review, here or in another process;
// learned from the changefeed, so with the feed off only for changes made by this queue),
// when its timeout passes (cause job.ErrTimeout; the job has been failed by then) and when
// Stop gives up waiting (cause ErrStopped); context.Cause(ctx) tells which. Once that happens,
// the handler's return value is ignored. A handler that panics fails its job with the
// panic as the error (a *PanicError); the queue keeps running.
type Handler func(ctx context.Context, j *job.Job) (result any, err error)

// Errors of Process.
var (
	// ErrProcessTwice is returned by a second call of Process: a queue has one handler.
	ErrProcessTwice = errors.New("queue: Process called twice: a queue has one handler")
	// ErrNilHandler is returned by Process given a nil handler.
	ErrNilHandler = fmt.Errorf("%w: nil handler", job.ErrInvalid)
)

// PanicError is the error a job fails with when its handler panics: Value is what the
// handler panicked with, Stack the handler goroutine's stack at the panic.
type PanicError = processor.PanicError

// ErrPassBack, returned by a handler as its error, passes the job back: it is saved as it
// is, with status active turned into waiting, as when the handler returns the job itself.
var ErrPassBack = processor.ErrPassBack

// Process starts processing the queue's jobs with handler, up to Concurrency at a time,
// in the background until Stop. It returns at once; call it once per queue
// (ErrProcessTwice). A queue that is not a Queue Master reviews the table once first, as
// the original does, so that jobs orphaned while no master ran are recovered.
func (q *Queue) Process(handler Handler) error {
	if handler == nil {
		return ErrNilHandler
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return ErrStopped
	}
	if q.proc != nil {
		return ErrProcessTwice
	}
	q.proc = processor.New(q.processorConfig(chain(handler, q.cfg.middleware)))
	var review func()
	if !q.cfg.master() {
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
func (q *Queue) processorConfig(handler Handler) processor.Config {
	cfg := processor.Config{
		Store:        q.db,
		Jobs:         q.store(),
		Handler:      processor.Handler(handler),
		QueueID:      q.id,
		Name:         q.cfg.name,
		LimitJobLogs: q.cfg.limitJobLogs,
		Concurrency:  q.Concurrency,
		Claiming: func() bool {
			return !q.Paused() && q.bg.Context().Err() == nil
		},
		Ready: q.ready0,
		Feed:  q.cfg.changeFeed,
		HandlerContext: func() context.Context {
			return context.WithValue(q.cfg.baseContext(), handlerKey{}, q)
		},
		LeaseEnd:       q.leaseEnd,
		RemoveFinished: q.cfg.removeImmediately(),
		Limits:         q.limitings,
		PassBack: func(ctx context.Context, j *job.Job, owner int) error {
			e := rdb.NewLog(j, q.id, nil, job.MessageUpdated, job.Information, "")
			return q.updateJob(ctx, j, e, owner)
		},
		Hooks: processor.Hooks{
			Emit: func(e processor.Event) {
				q.emit(Event{Type: EventType(e.Type), JobID: e.JobID, Err: e.Err, IsRepeating: e.IsRepeating})
			},
			Claimed:  q.claimedMetric,
			RunEnded: q.runMetric,
			Removed:  q.noteRemovals,
		},
		Log: q.log,
	}
	if q.cfg.heartbeats() {
		cfg.Heartbeat = q.cfg.heartbeat
		cfg.AssertWorkers = func(ctx context.Context) error { return q.assertSide(ctx, rdb.WorkersSuffix) }
	}
	if f := q.cfg.retryBackoff; f != nil {
		cfg.RetryDelay = rdb.CustomDelay(f)
	}
	if f := q.cfg.onTerminated; f != nil {
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

// Running returns how many jobs the queue is processing now.
func (q *Queue) Running() int {
	if p := q.processor(); p != nil {
		return p.Running()
	}
	return 0
}

// Idle reports whether the queue is processing no job.
func (q *Queue) Idle() bool { return q.Running() == 0 }

// runTime is how long the run of j that ended at at took.
func runTime(j job.Job, at time.Time) time.Duration {
	return max(at.Sub(j.DateStarted), 0)
}
