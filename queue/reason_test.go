package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// A cancelled event says why: the reason CancelJob or the handler's job.Cancel gave, here
// and in the other queues of the table, which learn it from the changefeed.
func TestCancelledEventsCarryTheReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	other := newQueue(t, f, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	here := f.q.Events(ctx, queue.EventCancelled)
	there := other.Events(ctx, queue.EventCancelled)

	jobs := f.add(t, 2)
	_, err := f.q.CancelJob(ctx, "customer left", jobs[0].ID)
	require.NoError(t, err)
	for _, events := range []<-chan queue.Event{here, there} {
		e := waitFor(t, events, queue.EventCancelled, jobs[0].ID)
		assert.Equal(t, "customer left", e.Reason)
	}

	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) { return nil, job.Cancel("spam") }))
	for _, events := range []<-chan queue.Event{here, there} {
		e := waitFor(t, events, queue.EventCancelled, jobs[1].ID)
		assert.Equal(t, "spam", e.Reason)
	}
}
