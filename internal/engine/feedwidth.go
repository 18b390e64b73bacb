package engine

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The changefeed has two widths. A queue follows the worker's feed
// (changefeed.FollowWorker: what processing acts on, filtered on the server) until a
// listener asks for events of other queues' jobs, and the whole feed
// (changefeed.FollowQueue) from then on; with Config.LocalEventsOnly, always the
// worker's. Every change of a table reaches every queue's feed, so with N processing
// queues the whole feeds cost the server N times each change, which nobody needs while
// nobody listens.
//
// Widening closes the worker's feed and opens the whole one, which loses the changes made
// in between, as a feed that fails and reopens does; the queue catches up the same way
// (see resync). Events returns once the whole feed is open, so that a listener misses no
// event made after its call. The feed never narrows again.

// feedWidth is the state of the changefeed's width.
type feedWidth struct {
	mu sync.Mutex
	// want is set once a listener has asked for other queues' job events.
	want bool
	// wide tells the width of the feed that is open or opening; wideOpen, that the whole
	// feed is open.
	wide, wideOpen bool
	// reopen ends the feed that is open or opening (nil: none is); switching is set when
	// it was called to widen.
	reopen    context.CancelFunc
	switching bool
	// waiters are closed once the whole feed is open, or the attempt failed.
	waiters []chan struct{}
}

// begin is called by the follow loop before it opens a feed, which cancel ends; it
// returns whether that feed is the whole one.
func (w *feedWidth) begin(cancel context.CancelFunc, localOnly bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reopen, w.wide = cancel, w.want && !localOnly
	return w.wide
}

// opened is called once the feed is open.
func (w *feedWidth) opened() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wide {
		w.wideOpen = true
		w.release()
	}
}

// end is called once the feed has ended; it returns whether it ended to widen (the loop
// then opens the whole feed at once).
func (w *feedWidth) end() (switched bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switched = w.switching
	w.reopen, w.switching, w.wideOpen = nil, false, false
	if !switched {
		w.release() // the feed failed: a listener waits for no reopening
	}
	return switched
}

func (w *feedWidth) release() {
	for _, ch := range w.waiters {
		close(ch)
	}
	w.waiters = nil
}

// widen asks for the whole feed. It returns a channel closed once it is open or its
// opening failed; nil when there is nothing to wait for (it is open, or no feed is: the
// next one opened is the whole one).
func (w *feedWidth) widen() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = true
	if w.wideOpen || w.reopen == nil {
		return nil
	}
	if !w.wide && !w.switching {
		w.switching = true
		w.reopen()
	}
	ch := make(chan struct{})
	w.waiters = append(w.waiters, ch)
	return ch
}

// feedEventTypes are the events learned from other queues' job changes: those only the
// whole feed brings.
var feedEventTypes = []string{EventAdded, EventActive, EventProgress, EventCompleted, EventCancelled,
	EventFailed, EventTerminated, EventRemoved, EventLog, EventReleased}

// WantsWholeFeed reports whether a listener of the event types (all when none) needs the
// whole changefeed.
func WantsWholeFeed(types []string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if slices.Contains(feedEventTypes, t) {
			return true
		}
	}
	return false
}

// widenWait bounds how long WidenFeed waits for the whole feed to open: a server that
// has gone silent may hold the attempt for longer, and a listener then misses the events
// made until it is open, as during any reopening.
const widenWait = 5 * time.Second

// WidenFeed is called before a listener of other queues' job events subscribes: unless
// the queue raises its own events only (or follows no feed), it makes the changefeed the
// whole one, and returns once that is open, the attempt failed, widenWait has passed, ctx
// ends or the queue stops.
func (q *Queue) WidenFeed(ctx context.Context) {
	if !q.cfg.ChangeFeed || q.cfg.LocalEventsOnly {
		return
	}
	ch := q.width.widen()
	if ch == nil {
		return
	}
	t := time.NewTimer(widenWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-q.feed.Context().Done():
	}
}
