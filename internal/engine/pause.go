package engine

import (
	"context"
	"fmt"
)

// Paused is queue.Queue.Paused, whose doc says what it does.
func (q *Queue) Paused() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paused
}

// Pause is queue.Queue.Pause, whose doc says what it does.
func (q *Queue) Pause(ctx context.Context, global bool) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	if global {
		if err := q.writeState(ctx, "paused"); err != nil {
			return err
		}
	}
	if q.inHandler(ctx) {
		resumed := q.beginPause(global)
		q.bg.Go(func(ctx context.Context) { _ = q.finishPause(ctx, global, resumed) })
		return nil
	}
	return q.pause(ctx, global)
}

// pause pauses this queue; global tells that every queue on the table is pausing.
func (q *Queue) pause(ctx context.Context, global bool) error {
	return q.finishPause(ctx, global, q.beginPause(global))
}

// beginPause stops the queue claiming. The channel it returns is closed by the next
// resume.
func (q *Queue) beginPause(global bool) <-chan struct{} {
	resumed := q.setPaused(true, global)
	q.emit(Event{Type: EventPausing, Global: global})
	return resumed
}

// finishPause waits for the running jobs, and for a claim under way and its jobs, and
// raises paused; a resume meanwhile ends the wait, with no paused event.
func (q *Queue) finishPause(ctx context.Context, global bool, resumed <-chan struct{}) error {
	if p := q.processor(); p != nil {
		wait, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-resumed:
				cancel()
			case <-wait.Done():
			}
		}()
		if err := p.WaitIdle(wait); err != nil {
			select {
			case <-resumed:
				return nil
			default:
				return err
			}
		}
	}
	select {
	case <-resumed:
		return nil
	default:
	}
	q.emit(Event{Type: EventPaused, Global: global})
	return nil
}

// Resume is queue.Queue.Resume, whose doc says what it does.
func (q *Queue) Resume(ctx context.Context, global bool) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	if global {
		if err := q.writeState(ctx, "active"); err != nil {
			return err
		}
	}
	q.resume(global)
	return nil
}

// resume resumes this queue; global tells that every queue on the table is resuming.
func (q *Queue) resume(global bool) {
	q.setPaused(false, global)
	q.wakeProcessing()
	q.emit(Event{Type: EventResumed, Global: global})
}

// setPaused records the pause state and returns the channel that the next resume closes
// (nil when resuming).
func (q *Queue) setPaused(paused, global bool) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paused, q.pausedGlobal = paused, global
	switch {
	case paused && q.resumed == nil:
		q.resumed = make(chan struct{})
	case !paused && q.resumed != nil:
		close(q.resumed)
		q.resumed = nil
	}
	return q.resumed
}

// pausedGlobally reports whether the queue is paused by a global pause.
func (q *Queue) pausedGlobally() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paused && q.pausedGlobal
}

// writeState records the queue's global state in the State Document, which every queue on
// the table follows through its changefeed.
func (q *Queue) writeState(ctx context.Context, state string) error {
	if err := q.db.WriteState(ctx, state); err != nil {
		return fmt.Errorf("queue %s: write state %q: %w", q.cfg.Name, state, err)
	}
	return nil
}
