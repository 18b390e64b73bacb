package engine

// Event is what the queue raises; package queue turns it into its public Event of the same
// fields, Type into an EventType.
type Event struct {
	Type        string
	QueueID     string
	JobID       string
	Local       bool
	Global      bool
	IsRepeating bool
	Progress    float64
	Reason      string
	Err         error
	Count       int
	Review      *ReviewResult
}

// ReviewResult is queue.ReviewResult: what a review did.
type ReviewResult struct {
	Reviewed int
	Removed  int
	Local    bool
}

// The event types, the Node.js library's event names (queue.EventType).
const (
	EventReady      = "ready"
	EventProcessing = "processing"
	EventProgress   = "progress"
	EventPausing    = "pausing"
	EventPaused     = "paused"
	EventResumed    = "resumed"
	EventRemoved    = "removed"
	EventIdle       = "idle"
	EventReset      = "reset"
	EventError      = "error"
	EventReviewed   = "reviewed"
	EventDetached   = "detached"
	EventStopping   = "stopping"
	EventStopped    = "stopped"
	EventDropped    = "dropped"
	EventAdded      = "added"
	EventActive     = "active"
	EventCompleted  = "completed"
	EventCancelled  = "cancelled"
	EventFailed     = "failed"
	EventTerminated = "terminated"
	EventReanimated = "reanimated"
	EventReleased   = "released"
	EventLog        = "log"
	EventUpdated    = "updated"
)

// emit raises a local event of this queue.
func (q *Queue) emit(e Event) {
	e.QueueID = q.id
	e.Local = true
	q.out.Publish(e)
}

// emitFrom raises an event learned from the feed, made by the queue queueID.
func (q *Queue) emitFrom(queueID string, e Event) {
	e.QueueID = queueID
	q.out.Publish(e)
}
