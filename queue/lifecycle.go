package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
)

// Reset deletes every job of the queue and keeps the table, its indexes and the State
// Document. It returns how many jobs it deleted.
func (q *Queue) Reset(ctx context.Context) (int, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer end()
	n, err := q.db.DeleteJobs(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue %s: reset: %w", q.cfg.name, err)
	}
	q.emit(Event{Type: EventReset, Count: n})
	return n, nil
}

// Stop shuts the queue down: it takes no new calls and claims no more jobs, waits for the
// calls in progress and the running handlers to finish (their jobs' own methods keep
// working meanwhile), ends its background work and releases its connection (unless the
// session was given in ConnectOptions). Its event channels are then closed. Afterwards
// every method returns ErrStopped.
//
// When ctx ends first, the running handlers' contexts are cancelled with cause ErrStopped
// and Stop returns ctx's error; the queue is stopped all the same, and the jobs still
// active are recovered by the Queue Master's review like those of a crashed process.
//
// A handler that stops its own queue, passing its own ctx (or one derived from it), is not
// waited for by that call, which could never return: Stop then refuses new calls and
// claims at once, returns nil, and finishes the shutdown in the background, once the
// handler has returned and its outcome is written.
func (q *Queue) Stop(ctx context.Context) error {
	if q.inHandler(ctx) {
		return q.shutdownLater(nil)
	}
	return q.shutdown(ctx, nil)
}

// shutdownLater starts a shutdown asked for by a handler, and leaves it to finish on its
// own once the handlers, that one included, have returned.
func (q *Queue) shutdownLater(last func(context.Context) error) error {
	if !q.beginShutdown() {
		return ErrStopped
	}
	go func() {
		if err := q.finishShutdown(context.Background(), last); err != nil {
			q.log.Warn("stopping the queue from a handler failed", "err", err)
		}
	}()
	return nil
}

// Drop stops the queue like Stop and then deletes its table with every job in it. Stop
// every other queue on the table first: a running queue whose changefeed breaks re-creates
// its table, as it would after a server restart.
//
// Called from a handler with its own ctx, Drop returns at once and drops the table in the
// background once the handler has returned (see Stop).
func (q *Queue) Drop(ctx context.Context) error {
	if q.inHandler(ctx) {
		return q.shutdownLater(q.dropTable)
	}
	return q.shutdown(ctx, q.dropTable)
}

// dropTable deletes the queue's table, last in a shutdown.
func (q *Queue) dropTable(ctx context.Context) error {
	if err := q.db.Drop(ctx); err != nil {
		return fmt.Errorf("queue %s: drop table: %w", q.cfg.name, err)
	}
	q.emit(Event{Type: EventDropped})
	return nil
}

// shutdown stops the queue, running last (if any) while the connection is still open.
func (q *Queue) shutdown(ctx context.Context, last func(context.Context) error) error {
	if !q.beginShutdown() {
		return ErrStopped
	}
	return q.finishShutdown(ctx, last)
}

// beginShutdown refuses new calls and claims; false when the queue was stopped already.
func (q *Queue) beginShutdown() bool {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return false
	}
	q.stopped = true
	q.mu.Unlock()
	q.emit(Event{Type: EventStopping})
	q.bg.Cancel(nil)
	return true
}

// finishShutdown waits for the calls, the runs and the background work, then releases the
// connection and closes the event channels.
func (q *Queue) finishShutdown(ctx context.Context, last func(context.Context) error) error {
	waitErr := lifecycle.Wait(ctx, q.ops.Wait)
	if waitErr == nil {
		waitErr = q.bg.Wait(ctx)
	}
	if p := q.processor(); p != nil {
		// With ctx over already, this gives up at once: the runs are cut off.
		if err := p.Stop(ctx, ErrStopped); waitErr == nil {
			waitErr = err
		}
	}
	q.feed.Cancel(nil)
	if waitErr == nil {
		waitErr = q.feed.Wait(ctx)
	}
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	var lastErr error
	if last != nil {
		lastErr = last(ctx)
	}
	if q.cfg.session == nil {
		if err := q.session.Close(); err != nil {
			q.log.Warn("closing the connection failed", "err", err)
		}
	}
	q.emit(Event{Type: EventStopped})
	q.emit(Event{Type: EventDetached})
	q.events.Close()
	return errors.Join(waitErr, lastErr)
}
