package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestWatchLineText(t *testing.T) {
	for _, tc := range []struct {
		e    queue.Event
		want string
	}{
		{queue.Event{Type: queue.EventProgress, Progress: 42.4}, "42%"},
		{queue.Event{Type: queue.EventCancelled, Reason: "deadline passed"}, "deadline passed"},
		{queue.Event{Type: queue.EventCompleted}, ""},
	} {
		assert.Equal(t, tc.want, progressText(tc.e), "%+v", tc.e)
	}
}
