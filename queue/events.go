package queue

import (
	"context"
	"slices"

	"github.com/rjqgo/rethinkdb-job-queue/internal/broker"
	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
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
	// EventReleased is this library's: a job of a workflow made waiting once every parent
	// completed (job.SetDependsOn).
	EventReleased EventType = "released"
	EventLog      EventType = "log"
	EventUpdated  EventType = "updated"
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
	// Reason is why the job was cancelled, on cancelled events: the reason given to
	// CancelJob or job.Cancel (DefaultCancelReason or the original's handler message when
	// none was given), here or in another queue (read from the job's last log entry). On
	// failed and terminated events of another queue's runs (read from the changefeed),
	// it is the run's error message, as its log entry holds it; the local ones have Err.
	Reason string
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

// Events returns a channel that receives the queue's events of the given types (all types
// when none are given). The channel is closed when ctx ends or the queue stops. A reader
// that falls Options.EventBuffer events behind loses the newer ones: the queue never waits
// for a reader. Drops are counted (DroppedEvents) and logged, once per stall of a reader,
// with the number that reader has lost.
//
// Until a listener asks for events of other queues' jobs (all types, or any of added,
// active, progress, completed, cancelled, failed, terminated, removed, log, released), the
// queue's changefeed carries only what its processing needs, which the server filters
// (see Options.LocalEventsOnly). The first such call switches it to the whole feed and
// returns once that is open (a few milliseconds; at most 5 s, or until ctx ends), so that
// the channel misses no event made after the call. The feed stays whole while such
// listeners remain, and narrows again 30 s after the last one's ctx has ended, unless
// another comes meanwhile.
func (q *Queue) Events(ctx context.Context, types ...EventType) <-chan Event {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	if engine.WantsWholeFeed(names) {
		context.AfterFunc(ctx, q.e.WidenFeed(ctx))
	}
	if len(types) == 0 {
		return q.events.Subscribe(ctx, nil)
	}
	types = slices.Clone(types)
	return q.events.Subscribe(ctx, func(e Event) bool { return slices.Contains(types, e.Type) })
}

// DroppedEvents returns how many events were dropped because a subscriber's channel was
// full, over the queue's life.
func (q *Queue) DroppedEvents() uint64 { return q.events.Dropped() }

// outlet turns the engine's events into Events for the queue's subscribers.
type outlet struct{ b *broker.Broker[Event] }

func (o outlet) Publish(e engine.Event) {
	var review *ReviewResult
	if e.Review != nil {
		r := ReviewResult(*e.Review)
		review = &r
	}
	o.b.Publish(Event{Type: EventType(e.Type), QueueID: e.QueueID, JobID: e.JobID, Local: e.Local,
		Global: e.Global, IsRepeating: e.IsRepeating, Progress: e.Progress, Reason: e.Reason, Err: publicErr(e.Err),
		Count: e.Count, Review: review})
}

func (o outlet) Close() { o.b.Close() }
