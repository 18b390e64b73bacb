package queue

import (
	"context"
)

// Reset deletes every job of the queue and keeps the table, its indexes and the State
// Document. It returns how many jobs it deleted.
func (q *Queue) Reset(ctx context.Context) (int, error) {
	return public(q.e.Reset(ctx))
}

// Stop shuts the queue down: it takes no new calls and claims no more jobs, waits for the
// calls in progress and the running handlers to finish (their jobs' own methods keep
// working meanwhile), ends its background work and releases its connection (unless the
// session was given in ConnectOptions). Its event channels are then closed. Afterwards
// every method returns ErrStopped.
//
// When ctx ends first, the running handlers' contexts are cancelled with cause ErrStopped
// and Stop returns ctx's error; the queue is stopped all the same. Stop then hands back
// the jobs it cut off, as asynq and Sidekiq do on shutdown: each handler that returns
// within a second of the cancellation with an error (its context's, say) or a pass-back
// has its job written back as waiting, due at once, with a log entry
// job.MessageWorkerStopped, no retry spent and its running slots given back, so that
// another worker starts it at once; a handler that completed or cancelled its job
// meanwhile has that outcome written, as are the outcomes not written yet. Stop so
// returns up to a second, and one write, after ctx ends. A handler still running then
// (one that ignores its context) leaves its job active, and its lease ends as after a
// crash: a Queue Master's review fails it (with heartbeats, within Heartbeat + 1 s).
//
// A handler that stops its own queue, passing its own ctx (or one derived from it), is not
// waited for by that call, which could never return: Stop then refuses new calls and
// claims at once, returns nil, and finishes the shutdown in the background, once the
// handler has returned and its outcome is written. A Stop from outside the handlers
// that finds a shutdown begun (by a handler or by another Stop) waits for it to finish
// (or for ctx) and returns ErrStopped, so that a program may stop its queue on the way
// out whatever stopped it first.
func (q *Queue) Stop(ctx context.Context) error {
	return publicErr(q.e.Stop(ctx))
}

// Drop stops the queue like Stop and then deletes its table with every job in it. Stop
// every other queue on the table first: a running queue whose changefeed breaks re-creates
// its table, as it would after a server restart.
//
// Called from a handler with its own ctx, Drop returns at once and drops the table in the
// background once the handler has returned (see Stop).
func (q *Queue) Drop(ctx context.Context) error {
	return publicErr(q.e.Drop(ctx))
}
