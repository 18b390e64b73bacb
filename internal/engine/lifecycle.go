package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
)

// Reset is queue.Queue.Reset, whose doc says what it does.
func (q *Queue) Reset(ctx context.Context) (int, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer end()
	n, err := q.db.DeleteJobs(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue %s: reset: %w", q.cfg.Name, err)
	}
	q.emit(Event{Type: EventReset, Count: n})
	return n, nil
}

// Stop is queue.Queue.Stop, whose doc says what it does.
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

// Drop is queue.Queue.Drop, whose doc says what it does.
func (q *Queue) Drop(ctx context.Context) error {
	if q.inHandler(ctx) {
		return q.shutdownLater(q.dropTable)
	}
	return q.shutdown(ctx, q.dropTable)
}

// dropTable deletes the queue's table, last in a shutdown.
func (q *Queue) dropTable(ctx context.Context) error {
	if err := q.db.Drop(ctx); err != nil {
		return fmt.Errorf("queue %s: drop table: %w", q.cfg.Name, err)
	}
	q.emit(Event{Type: EventDropped})
	return nil
}

// shutdown stops the queue, running last (if any) while the connection is still open.
// When a shutdown has begun already (a handler or another Stop stopped the queue), it
// waits for that one to finish, or for ctx, and returns ErrStopped: a program that stops
// its queue on the way out must not exit while the outcome of the handler that stopped
// it is unwritten.
func (q *Queue) shutdown(ctx context.Context, last func(context.Context) error) error {
	if !q.beginShutdown() {
		return q.awaitShutdown(ctx)
	}
	return q.finishShutdown(ctx, last)
}

// awaitShutdown waits for the shutdown under way: ErrStopped once it has finished (even
// with ctx over), else ctx's error.
func (q *Queue) awaitShutdown(ctx context.Context) error {
	select {
	case <-q.down:
		return ErrStopped
	default:
	}
	select {
	case <-q.down:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
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
		if err := p.Stop(ctx, q.public(errStopping)); waitErr == nil {
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
	if q.conn != nil {
		if err := q.conn.Close(); err != nil {
			q.log.Warn("closing the connection failed", "err", err)
		}
	}
	q.emit(Event{Type: EventStopped})
	q.emit(Event{Type: EventDetached})
	q.out.Close()
	close(q.down)
	return errors.Join(waitErr, lastErr)
}

// errStopping is the cause of the handler contexts a Stop cuts off: ErrStopped, in words
// that fit a handler's log.
var errStopping error = stoppingError{}

type stoppingError struct{}

func (stoppingError) Error() string {
	return "queue: the worker is stopping: the job goes back to the queue unless its handler finishes it now"
}

func (stoppingError) Unwrap() error { return ErrStopped }
