package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
)

// The engine raises events by name; the public constants must name the same events.
func TestEventTypesAreTheEnginesNames(t *testing.T) {
	for public, name := range map[EventType]string{
		EventReady: engine.EventReady, EventProcessing: engine.EventProcessing, EventProgress: engine.EventProgress,
		EventPausing: engine.EventPausing, EventPaused: engine.EventPaused, EventResumed: engine.EventResumed,
		EventRemoved: engine.EventRemoved, EventIdle: engine.EventIdle, EventReset: engine.EventReset,
		EventError: engine.EventError, EventReviewed: engine.EventReviewed, EventDetached: engine.EventDetached,
		EventStopping: engine.EventStopping, EventStopped: engine.EventStopped, EventDropped: engine.EventDropped,
		EventAdded: engine.EventAdded, EventActive: engine.EventActive, EventCompleted: engine.EventCompleted,
		EventCancelled: engine.EventCancelled, EventFailed: engine.EventFailed, EventTerminated: engine.EventTerminated,
		EventReanimated: engine.EventReanimated, EventLog: engine.EventLog, EventUpdated: engine.EventUpdated,
	} {
		assert.Equal(t, string(public), name)
	}
}
