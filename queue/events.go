package queue

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// EventType names an event; the values are the Node.js library's event names, so
// EventType("completed") is EventCompleted.
type EventType string

// The event types of the original library.
const (
	EventReady      EventType = "ready"
	EventProcessing EventType = "processing"
	EventProgress   EventType = "progress"
	EventPausing    EventType = "pausing"
	EventPaused     EventType = "paused"
	EventResumed    EventType = "resumed"
	EventRemoved    EventType = "removed"
	EventIdle       EventType = "idle"
	EventReset      EventType = "reset"
	EventError      EventType = "error"
	EventReviewed   EventType = "reviewed"
	EventDetached   EventType = "detached"
	EventStopping   EventType = "stopping"
	EventStopped    EventType = "stopped"
	EventDropped    EventType = "dropped"
	EventAdded      EventType = "added"
	EventActive     EventType = "active"
	EventCompleted  EventType = "completed"
	EventCancelled  EventType = "cancelled"
	EventFailed     EventType = "failed"
	EventTerminated EventType = "terminated"
	EventReanimated EventType = "reanimated"
	EventLog        EventType = "log"
	EventUpdated    EventType = "updated"
)

// Event is one thing that happened to the queue or to one of its jobs. The fields that do
// not apply to a type are zero.
type Event struct {
	Type EventType
	// QueueID is the id of the queue that did it: this queue's for local events, the other
	// queue's for events learned from the changefeed.
	QueueID string
	JobID   string
	// Local is true for events raised by the queue that did the work.
	Local bool
	// Global is true for pause and resume events that apply to every queue on the table.
	Global bool
	// IsRepeating is set on completed events of jobs that will run again. (A repeat
	// finished by another queue goes from active back to waiting and arrives as a log
	// event, as in the original.)
	IsRepeating bool
	// Progress is the job's progress, on progress events.
	Progress float64
	// Err is the error of error events, and the handler's error on the local failed and
	// terminated events of a run.
	Err error
	// Count is the number of jobs removed, on reset events.
	Count int
	// Review is the review's result, on reviewed events.
	Review *ReviewResult
}

// ReviewResult is what a Queue Master review did.
type ReviewResult struct {
	// Reviewed is the number of orphaned active jobs that were failed or terminated.
	Reviewed int
	// Removed is the number of finished jobs removed.
	Removed int
	// Local is true when this queue ran the review.
	Local bool
}

// broker fans events out to subscribers without ever blocking the publisher.
type broker struct {
	mu      sync.RWMutex
	subs    map[*subscriber]struct{}
	closed  bool
	size    int
	dropped atomic.Uint64
	// onDrop is told of a subscriber's first drop after a delivery, so that a reader that
	// is behind is logged once per stall, not once per event.
	onDrop func(total uint64)
}

type subscriber struct {
	ch      chan Event
	types   []EventType
	dropped atomic.Uint64
	stalled atomic.Bool
}

// newBroker returns a broker whose subscribers' channels hold size events.
func newBroker(size int, onDrop func(total uint64)) *broker {
	return &broker{subs: make(map[*subscriber]struct{}), size: size, onDrop: onDrop}
}

// subscribe returns a channel of the given types (all when none), closed when ctx ends or
// the broker closes.
func (b *broker) subscribe(ctx context.Context, types []EventType) <-chan Event {
	s := &subscriber{ch: make(chan Event, b.size), types: types}
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

func (b *broker) unsubscribe(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

func (b *broker) publish(e Event) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		if len(s.types) > 0 && !slices.Contains(s.types, e.Type) {
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

// close closes every subscriber's channel; later subscriptions get a closed channel.
func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
}

// Events returns a channel that receives the queue's events of the given types (all types
// when none are given). The channel is closed when ctx ends or the queue stops. A reader
// that falls Options.EventBuffer events behind loses the newer ones: the queue never waits
// for a reader. Drops are counted (DroppedEvents) and logged, once per stall of a reader,
// with the number that reader has lost.
func (q *Queue) Events(ctx context.Context, types ...EventType) <-chan Event {
	return q.events.subscribe(ctx, slices.Clone(types))
}

// DroppedEvents returns how many events were dropped because a subscriber's channel was
// full, over the queue's life.
func (q *Queue) DroppedEvents() uint64 { return q.events.dropped.Load() }

// emit raises a local event of this queue.
func (q *Queue) emit(e Event) {
	e.QueueID = q.id
	e.Local = true
	q.events.publish(e)
}
