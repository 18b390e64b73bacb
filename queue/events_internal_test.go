package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBrokerFiltersTypes(t *testing.T) {
	b := newBroker(DefaultEventBuffer, nil)
	ctx := t.Context()
	all := b.subscribe(ctx, nil)
	done := b.subscribe(ctx, []EventType{EventCompleted, EventFailed})
	for _, typ := range []EventType{EventAdded, EventCompleted, EventLog, EventFailed} {
		b.publish(Event{Type: typ})
	}
	assert.Equal(t, []EventType{EventAdded, EventCompleted, EventLog, EventFailed}, drain(all))
	assert.Equal(t, []EventType{EventCompleted, EventFailed}, drain(done))
	assert.Zero(t, b.dropped.Load())
}

// A reader that does not read must never hold up the publisher: its events are dropped
// and counted, and other readers still get theirs.
func TestBrokerNeverBlocksOnASlowReader(t *testing.T) {
	b := newBroker(DefaultEventBuffer, nil)
	ctx := t.Context()
	stuck := b.subscribe(ctx, nil)
	live := b.subscribe(ctx, []EventType{EventProgress})
	received := make(chan int)
	go func() {
		n := 0
		for range live {
			n++
		}
		received <- n
	}()
	const total = 3 * DefaultEventBuffer
	start := time.Now()
	for range total {
		b.publish(Event{Type: EventProgress})
	}
	assert.Less(t, time.Since(start), time.Second, "publishing does not wait for readers")
	assert.GreaterOrEqual(t, b.dropped.Load(), uint64(total-DefaultEventBuffer), "the stuck reader's overflow is counted")
	assert.Len(t, stuck, DefaultEventBuffer)
	b.close()
	liveDropped := b.dropped.Load() - (total - DefaultEventBuffer)
	assert.Equal(t, uint64(total), uint64(<-received)+liveDropped,
		"every event is either delivered to the live reader or counted as dropped")
}

func TestBrokerClosesOnContextAndClose(t *testing.T) {
	b := newBroker(DefaultEventBuffer, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.subscribe(ctx, nil)
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, time.Second, time.Millisecond, "the channel closes when its context ends")
	b.publish(Event{Type: EventAdded}) // no panic on a closed subscriber

	other := b.subscribe(context.Background(), nil)
	b.close()
	_, ok := <-other
	assert.False(t, ok, "close closes every channel")
	_, ok = <-b.subscribe(context.Background(), nil)
	assert.False(t, ok, "a subscription after close is closed")
}

func drain(ch <-chan Event) []EventType {
	var got []EventType
	for {
		select {
		case e := <-ch:
			got = append(got, e.Type)
		default:
			return got
		}
	}
}

// A buffer of its own per subscription, and one report per stall of a reader, not one per
// dropped event.
func TestBrokerReportsEachStallOnce(t *testing.T) {
	var reports []uint64
	b := newBroker(2, func(total uint64) { reports = append(reports, total) })
	ch := b.subscribe(t.Context(), nil)
	for range 5 {
		b.publish(Event{Type: EventAdded})
	}
	assert.Len(t, ch, 2, "the channel holds EventBuffer events")
	assert.Equal(t, []uint64{1}, reports, "three drops in one stall are reported once")
	<-ch
	b.publish(Event{Type: EventAdded}) // delivered: the stall is over
	b.publish(Event{Type: EventAdded}) // dropped again
	assert.Equal(t, []uint64{1, 4}, reports, "a new stall is reported with the reader's total")
	assert.Equal(t, uint64(4), b.dropped.Load())
}
