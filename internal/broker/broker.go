// Package broker fans events out to subscribers' channels without ever blocking the
// publisher: a queue raises its events through one, and a reader that falls behind loses
// the newer ones, counted and reported, instead of holding up the queue.
package broker

import (
	"context"
	"sync"
	"sync/atomic"
)

// Broker fans events of type E out to subscribers.
type Broker[E any] struct {
	mu      sync.RWMutex
	subs    map[*subscriber[E]]struct{}
	closed  bool
	size    int
	dropped atomic.Uint64
	// onDrop is told of a subscriber's first drop after a delivery, so that a reader that
	// is behind is reported once per stall, not once per event.
	onDrop func(total uint64)
}

type subscriber[E any] struct {
	ch      chan E
	match   func(E) bool
	dropped atomic.Uint64
	stalled atomic.Bool
}

// New returns a broker whose subscribers' channels hold size events. onDrop, when not
// nil, is told of each stall of a reader, with the number of events that reader has lost.
func New[E any](size int, onDrop func(total uint64)) *Broker[E] {
	return &Broker[E]{subs: make(map[*subscriber[E]]struct{}), size: size, onDrop: onDrop}
}

// Subscribe returns a channel of the events match accepts (all when match is nil),
// closed when ctx ends or the broker closes.
func (b *Broker[E]) Subscribe(ctx context.Context, match func(E) bool) <-chan E {
	s := &subscriber[E]{ch: make(chan E, b.size), match: match}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(s.ch)
		return s.ch
	}
	b.subs[s] = struct{}{}
	context.AfterFunc(ctx, func() { b.unsubscribe(s) })
	return s.ch
}

func (b *Broker[E]) unsubscribe(s *subscriber[E]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

// Publish delivers e to every subscriber that accepts it and has room for it; for the
// others it is dropped and counted.
func (b *Broker[E]) Publish(e E) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		if s.match != nil && !s.match(e) {
			continue
		}
		select {
		case s.ch <- e:
			s.stalled.Store(false)
		default:
			b.dropped.Add(1)
			n := s.dropped.Add(1)
			if !s.stalled.Swap(true) && b.onDrop != nil {
				b.onDrop(n)
			}
		}
	}
}

// Dropped returns how many events were dropped, over the broker's life.
func (b *Broker[E]) Dropped() uint64 { return b.dropped.Load() }

// Close closes every subscriber's channel; later subscriptions get a closed channel.
func (b *Broker[E]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
}
