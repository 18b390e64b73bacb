package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const buffer = 1024

func only(types ...string) func(string) bool {
	return func(e string) bool { return slices.Contains(types, e) }
}

func TestBrokerFiltersEvents(t *testing.T) {
	b := New[string](buffer, nil)
	ctx := t.Context()
	all := b.Subscribe(ctx, nil)
	done := b.Subscribe(ctx, only("completed", "failed"))
	for _, e := range []string{"added", "completed", "log", "failed"} {
		b.Publish(e)
	}
	assert.Equal(t, []string{"added", "completed", "log", "failed"}, drain(all))
	assert.Equal(t, []string{"completed", "failed"}, drain(done))
	assert.Zero(t, b.Dropped())
}

// A reader that does not read must never hold up the publisher: its events are dropped
// and counted, and other readers still get theirs.
func TestBrokerNeverBlocksOnASlowReader(t *testing.T) {
	b := New[string](buffer, nil)
	ctx := t.Context()
	stuck := b.Subscribe(ctx, nil)
	live := b.Subscribe(ctx, only("progress"))
	received := make(chan int)
	go func() {
		n := 0
		for range live {
			n++
		}
		received <- n
	}()
	const total = 3 * buffer
	start := time.Now()
	for range total {
		b.Publish("progress")
	}
	assert.Less(t, time.Since(start), time.Second, "publishing does not wait for readers")
	assert.GreaterOrEqual(t, b.Dropped(), uint64(total-buffer), "the stuck reader's overflow is counted")
	assert.Len(t, stuck, buffer)
	b.Close()
	liveDropped := b.Dropped() - (total - buffer)
	assert.Equal(t, uint64(total), uint64(<-received)+liveDropped,
		"every event is either delivered to the live reader or counted as dropped")
}

func TestBrokerClosesOnContextAndClose(t *testing.T) {
	b := New[string](buffer, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx, nil)
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, time.Second, time.Millisecond, "the channel closes when its context ends")
	b.Publish("added") // no panic on a closed subscriber

	other := b.Subscribe(context.Background(), nil)
	b.Close()
	_, ok := <-other
	assert.False(t, ok, "close closes every channel")
	_, ok = <-b.Subscribe(context.Background(), nil)
	assert.False(t, ok, "a subscription after close is closed")
}

// A buffer of its own per subscription, and one report per stall of a reader, not one per
// dropped event.
func TestBrokerReportsEachStallOnce(t *testing.T) {
	var reports []uint64
	b := New[string](2, func(total uint64) { reports = append(reports, total) })
	ch := b.Subscribe(t.Context(), nil)
	for range 5 {
		b.Publish("added")
	}
	assert.Len(t, ch, 2, "the channel holds its buffer's events")
	assert.Equal(t, []uint64{1}, reports, "three drops in one stall are reported once")
	<-ch
	b.Publish("added") // delivered: the stall is over
	b.Publish("added") // dropped again
	assert.Equal(t, []uint64{1, 4}, reports, "a new stall is reported with the reader's total")
	assert.Equal(t, uint64(4), b.Dropped())
}

func drain(ch <-chan string) []string {
	var got []string
	for {
		select {
		case e := <-ch:
			got = append(got, e)
		default:
			return got
		}
	}
}
