package queue

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
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
	ErrProcessTwice = engine.ErrProcessTwice
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
	return q.e.Process(processor.Handler(chain(handler, q.middleware)))
}

// handlerKey marks the context of a handler: its value is the handler's queue.
type handlerKey struct{}

// Running returns how many jobs the queue is processing now.
func (q *Queue) Running() int {
	return q.e.Running()
}

// Idle reports whether the queue is processing no job.
func (q *Queue) Idle() bool { return q.Running() == 0 }
