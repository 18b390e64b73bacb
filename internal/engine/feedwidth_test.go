package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWantsWholeFeed(t *testing.T) {
	cases := []struct {
		types []string
		want  bool
	}{
		{nil, true}, // all types
		{[]string{EventIdle, EventProcessing, EventError}, false},
		{[]string{EventPaused, EventResumed, EventReviewed}, false}, // the worker's feed brings them
		{[]string{EventCompleted}, true},
		{[]string{EventIdle, EventAdded}, true},
		{[]string{EventRemoved}, true},
		{[]string{EventReleased}, true},
		{[]string{EventReanimated, EventUpdated, EventReset}, false}, // raised by this queue only
	}
	for _, c := range cases {
		assert.Equal(t, c.want, WantsWholeFeed(c.types), "%v", c.types)
	}
}

// The follow loop and the listeners' calls, step by step: a listener arriving while the
// worker's feed is open ends it and waits for the whole one; one arriving while no feed is
// open waits for nothing, and the next feed is the whole one; a failed feed releases the
// listeners waiting for it.
func TestFeedWidth(t *testing.T) {
	var w feedWidth
	ended := 0
	cancel := func() { ended++ }
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	assert.False(t, w.begin(cancel, false), "no listener: the worker's feed")
	w.opened()
	waiting := w.widen()
	if assert.NotNil(t, waiting) {
		assert.False(t, closed(waiting))
	}
	assert.Equal(t, 1, ended, "widening ends the worker's feed")
	second := w.widen()
	assert.NotNil(t, second, "a second listener waits too")
	assert.Equal(t, 1, ended, "and ends nothing more")
	assert.True(t, w.end(), "the feed ended to widen")
	assert.True(t, w.begin(cancel, false), "the next feed is the whole one")
	assert.False(t, closed(waiting), "not open yet")
	w.opened()
	assert.True(t, closed(waiting) && closed(second), "open: the listeners go on")
	assert.Nil(t, w.widen(), "the whole feed is open: nothing to wait for")

	// The whole feed fails: no listener waits for its reopening, and it reopens whole.
	assert.False(t, w.end())
	assert.Nil(t, w.widen(), "no feed is open")
	assert.True(t, w.begin(cancel, false))
	opening := w.widen()
	assert.NotNil(t, opening, "the whole feed is opening")
	assert.False(t, w.end(), "its opening failed")
	assert.True(t, closed(opening), "which releases the listener")
	assert.Equal(t, 1, ended, "a feed that is already whole is never ended to widen")

	// LocalEventsOnly never widens (WidenFeed does not call widen; begin ignores want).
	var local feedWidth
	local.want = true
	assert.False(t, local.begin(cancel, true))
}

// When the last listener has gone, the feed narrows after the wait, unless one comes back
// first; one that comes while it narrows waits for the whole feed again.
func TestFeedNarrowsAfterItsLastListener(t *testing.T) {
	var w feedWidth
	var mu sync.Mutex
	ended := 0
	cancel := func() { mu.Lock(); ended++; mu.Unlock() }
	endings := func() int { mu.Lock(); defer mu.Unlock(); return ended }
	defer w.stop()

	w.begin(cancel, false)
	w.opened()
	first := w.widen()
	assert.True(t, w.end())
	assert.True(t, w.begin(cancel, false))
	w.opened()
	assert.Nil(t, w.widen(), "a second listener, the whole feed open")
	assert.NotNil(t, first)

	w.leave(time.Hour)
	assert.Nil(t, w.narrowing, "one listener is left")
	w.leave(time.Hour)
	assert.NotNil(t, w.narrowing, "the last one has gone: the feed narrows later")
	stale := w.gen
	assert.Nil(t, w.widen(), "one comes back before")
	assert.Nil(t, w.narrowing)
	w.narrow(stale) // a timer that fired as it came
	assert.Equal(t, 1, endings(), "the feed stays whole")

	w.leave(time.Hour)
	w.narrow(w.gen)
	assert.Equal(t, 2, endings(), "narrowing ends the whole feed")
	again := w.widen()
	if assert.NotNil(t, again, "a listener that comes while it narrows waits") {
		assert.Equal(t, 2, endings(), "and ends nothing more")
		assert.True(t, w.end())
		assert.True(t, w.begin(cancel, false), "the next feed is the whole one again")
		w.opened()
		<-again
	}

	// With a real timer: the feed narrows, and the next one is the worker's.
	w.leave(time.Millisecond)
	assert.Eventually(t, func() bool { return endings() == 3 }, 5*time.Second, time.Millisecond)
	assert.True(t, w.end())
	assert.False(t, w.begin(cancel, false))
	w.opened()
	assert.NotNil(t, w.widen(), "the next listener widens it again")
	assert.Equal(t, 4, endings())

	// Once the feed has stopped for good, a listener that goes sets no timer.
	w.stop()
	w.leave(time.Millisecond)
	assert.Nil(t, w.narrowing)
}

// WidenFeed does nothing for a queue that raises its own events only, or has no feed.
func TestWidenFeedWithoutTheWholeFeed(t *testing.T) {
	for _, cfg := range []Config{{ChangeFeed: true, LocalEventsOnly: true}, {ChangeFeed: false}} {
		q := &Queue{cfg: cfg}
		q.WidenFeed(context.Background())()
		assert.False(t, q.width.want)
		assert.Zero(t, q.width.listeners)
	}
}
