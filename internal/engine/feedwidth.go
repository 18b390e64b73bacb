package engine

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The changefeed has two widths. A queue follows the worker's feed
// (changefeed.FollowWorker: what processing acts on, filtered on the server) while no
// listener wants events of other queues' jobs, and the whole feed (changefeed.FollowQueue)
// while one does; with Config.LocalEventsOnly, always the worker's. Every change of a
// table reaches every queue's feed, so with N processing queues the whole feeds cost the
// server N times each change, which nobody needs while nobody listens.
//
// Switching closes the feed that is open and opens the other, which loses the changes
// made in between, as a feed that fails and reopens does; the queue catches up the same
// way (see resync). Events returns once the whole feed is open, so that a listener misses
// no event made after its call. When the last such listener has gone, the feed narrows
// again after narrowAfter, unless another comes meanwhile: a web process whose requests
// each listen for a while keeps the whole feed while they come, rather than switching at
// each.

// narrowAfter is how long the whole feed stays open after its last listener has gone.
const narrowAfter = 30 * time.Second

// feedWidth is the state of the changefeed's width.
type feedWidth struct {
	mu sync.Mutex
	// listeners counts the listeners of other queues' job events; want is set while
	// the feed is to be whole: from the first one's arrival until narrowAfter after the
	// last one has gone.
	listeners int
	want      bool
	// wide tells the width of the feed that is open or opening; wideOpen, that the whole
	// feed is open.
	wide, wideOpen bool
	// reopen ends the feed that is open or opening (nil: none is); switching is set when
	// it was called to change the width.
	reopen    context.CancelFunc
	switching bool
	// waiters are closed once the whole feed is open, or the attempt failed.
	waiters []chan struct{}
	// narrowing narrows the feed once no listener has come back; gen tells a timer that
	// fired after a listener came (and perhaps went again) from the current one.
	narrowing *time.Timer
	gen       int
	// stopped is set once the queue's feed has stopped for good: no narrowing is due.
	stopped bool
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

// end is called once the feed has ended; it returns whether it ended to change the width
// (the loop then opens the other feed at once).
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

// widen adds a listener that wants the whole feed. It returns a channel closed once that
// is open or its opening failed; nil when there is nothing to wait for (it is open, or no
// feed is: the next one opened is the whole one).
func (w *feedWidth) widen() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listeners++
	w.want = true
	w.gen++
	if w.narrowing != nil {
		w.narrowing.Stop()
		w.narrowing = nil
	}
	if w.wideOpen || w.reopen == nil {
		return nil
	}
	w.change(true)
	ch := make(chan struct{})
	w.waiters = append(w.waiters, ch)
	return ch
}

// change ends the open feed for one of the width wide, unless it is of that width or
// already ending.
func (w *feedWidth) change(wide bool) {
	if w.reopen != nil && w.wide != wide && !w.switching {
		w.switching = true
		w.wideOpen = false
		w.reopen()
	}
}

// leave removes a listener added by widen. When it was the last, the feed narrows after
// the wait given, unless another listener comes first.
func (w *feedWidth) leave(after time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listeners--
	if w.listeners > 0 || w.stopped {
		return
	}
	gen := w.gen
	w.narrowing = time.AfterFunc(after, func() { w.narrow(gen) })
}

// narrow makes the feed the worker's, unless a listener came since the timer of
// generation gen was set.
func (w *feedWidth) narrow(gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen || w.listeners > 0 {
		return
	}
	w.narrowing = nil
	w.want = false
	w.change(false)
}

// stop stops a narrowing that has not come yet: the queue is stopping.
func (w *feedWidth) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.stopped = true
	if w.narrowing != nil {
		w.narrowing.Stop()
		w.narrowing = nil
	}
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
// ends or the queue stops. The listener calls release once it has gone (more than once
// does no harm): narrowAfter after the last one has, the feed narrows again.
func (q *Queue) WidenFeed(ctx context.Context) (release func()) {
	if !q.cfg.ChangeFeed || q.cfg.LocalEventsOnly {
		return func() {}
	}
	ch := q.width.widen()
	after := q.narrowAfter
	if after <= 0 {
		after = narrowAfter
	}
	release = sync.OnceFunc(func() { q.width.leave(after) })
	if ch == nil {
		return release
	}
	t := time.NewTimer(widenWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-q.feed.Context().Done():
	}
	return release
}

// SetNarrowAfter sets how long the whole changefeed stays open after its last listener has
// gone (narrowAfter when d ≤ 0), for tests.
func (q *Queue) SetNarrowAfter(d time.Duration) { q.narrowAfter = d }
