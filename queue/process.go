package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

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
// Stop gives up waiting (cause ErrStopped); context.Cause(ctx) tells which. Once a cancel
// or the timeout has happened, the handler's return value is ignored. After Stop's, it
// decides what Stop writes: a result or job.Cancel is written as usual, and an error (the
// context's, say) or a pass-back hands the job back, waiting at once with no retry spent
// (see Queue.Stop). A handler that panics fails its job with the panic as the error (a
// *PanicError); the queue keeps running.
type Handler func(ctx context.Context, j *job.Job) (result any, err error)

// Errors of Process.
var (
	// ErrProcessTwice is returned by a second call of Process: a queue has one handler.
	ErrProcessTwice = errors.New("queue: Process called twice: a queue has one handler")
	// ErrNilHandler is returned by Process given a nil handler.
	ErrNilHandler = invalid("queue: invalid: nil handler")
)

// PanicError is the error a job fails with when its handler panics: Value is what the
// handler panicked with, Stack the handler goroutine's stack at the panic.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
	// Stack is the handler goroutine's stack at the panic.
	Stack []byte
}

// Error says that the handler panicked, and with what.
func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, for errors.Is and errors.As.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrPassBack, returned by a handler as its error, passes the job back: it is saved as it
// is, with status active turned into waiting, as when the handler returns the job itself.
var ErrPassBack = errors.New("queue: job passed back by its handler")

// Process starts processing the queue's jobs with handler, up to Concurrency at a time,
// in the background until Stop. It returns at once; call it once per queue
// (ErrProcessTwice). A queue that is not a Queue Master reviews the table once first, as
// the original does, so that jobs orphaned while no master ran are recovered.
func (q *Queue) Process(handler Handler) error {
	if handler == nil {
		return ErrNilHandler
	}
	return publicErr(q.e.Process(processor.Handler(engineHandler(chain(handler, q.middleware)))))
}

// engineHandler is h as the engine runs it: a returned ErrPassBack is the engine's, and a
// panic, recovered here (outside every middleware), is a *PanicError.
func engineHandler(h Handler) Handler {
	return func(ctx context.Context, j *job.Job) (result any, err error) {
		defer func() {
			if v := recover(); v != nil {
				result, err = nil, &processor.PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		result, err = h(ctx, j)
		if err != nil && errors.Is(err, ErrPassBack) {
			err = &publicError{err, processor.ErrPassBack}
		}
		return result, err
	}
}

// handlerKey marks the context of a handler: its value is the handler's queue.
type handlerKey struct{}

// Running returns how many jobs the queue is processing now.
func (q *Queue) Running() int {
	return q.e.Running()
}

// Idle reports whether the queue is processing no job.
func (q *Queue) Idle() bool { return q.Running() == 0 }
