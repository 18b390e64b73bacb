package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Every job event made by one queue reaches another queue on the table through the
// changefeed, marked non-local and with the maker's id.
func TestEventsOfOtherQueuesArrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	watcher := newQueue(t, f, &queue.Options{MasterInterval: -1})
	seen := watcher.Events(ctx)
	maker := f.q
	expect := func(typ queue.EventType, id string) queue.Event {
		t.Helper()
		e := waitFor(t, seen, typ, id)
		assert.False(t, e.Local, "%s from the feed is not local", typ)
		if typ != queue.EventRemoved {
			assert.Equal(t, maker.ID(), e.QueueID, "%s carries the maker's id", typ)
		}
		return e
	}

	ok := maker.CreateJob("ok")
	bad := maker.CreateJob("bad").SetRetryMax(1).SetRetryDelay(0)
	gone := maker.CreateJob("cancel me")
	_, err := maker.AddJob(ctx, ok, bad, gone)
	require.NoError(t, err)
	expect(queue.EventAdded, ok.ID)

	require.NoError(t, gone.AddLog(ctx, nil, "note", "", ""))
	expect(queue.EventLog, gone.ID)
	_, err = maker.CancelJob(ctx, "no", gone.ID)
	require.NoError(t, err)
	expect(queue.EventCancelled, gone.ID)
	_, err = maker.RemoveJob(ctx, gone.ID)
	require.NoError(t, err)
	expect(queue.EventRemoved, gone.ID)

	require.NoError(t, maker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Data == "bad" {
			return nil, errors.New("no")
		}
		if err := j.UpdateProgress(ctx, 50); err != nil {
			return nil, err
		}
		return nil, nil
	}))
	expect(queue.EventActive, ok.ID)
	assert.Equal(t, 50.0, expect(queue.EventProgress, ok.ID).Progress)
	expect(queue.EventCompleted, ok.ID)
	expect(queue.EventFailed, bad.ID)
	expect(queue.EventTerminated, bad.ID)

	_, err = maker.Review(ctx)
	require.NoError(t, err)
	e := expect(queue.EventReviewed, "")
	require.NotNil(t, e.Review)
	assert.False(t, e.Review.Local)
}

// The queue that makes a change raises its event once, locally, and never again from its
// own feed.
func TestNoEventIsRaisedTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	events := f.q.Events(ctx)
	j := f.add(t, 1)[0]
	require.NoError(t, j.AddLog(ctx, nil, "", "", ""))
	_, err := f.q.CancelJob(ctx, "x", j.ID)
	require.NoError(t, err)
	_, err = f.q.ReanimateJob(ctx, time.Time{}, j.ID)
	require.NoError(t, err)
	_, err = f.q.RemoveJob(ctx, j.ID)
	require.NoError(t, err)
	require.NoError(t, f.q.Pause(ctx, true))
	require.NoError(t, f.q.Resume(ctx, true))
	// A marker made by another queue: once it arrives, the feed has delivered everything
	// before it.
	other := newQueue(t, f, &queue.Options{MasterInterval: -1})
	marker := other.CreateJob("marker")
	_, err = other.AddJob(ctx, marker)
	require.NoError(t, err)

	counts := map[queue.EventType]int{}
	for e := range events {
		if e.JobID == marker.ID {
			break
		}
		assert.True(t, e.Local, "an event from our own change came back from the feed: %+v", e)
		counts[e.Type]++
	}
	assert.Equal(t, map[queue.EventType]int{
		queue.EventAdded: 1, queue.EventLog: 1, queue.EventCancelled: 1, queue.EventReanimated: 1,
		queue.EventRemoved: 1, queue.EventPausing: 1, queue.EventPaused: 1, queue.EventResumed: 1,
	}, counts)
}

func TestGlobalPauseAndResumeReachEveryQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))

	require.NoError(t, f.q.Pause(ctx, true))
	e := waitFor(t, events, queue.EventPaused, "")
	assert.True(t, e.Global)
	assert.True(t, worker.Paused())
	j := f.add(t, 1)[0]
	time.Sleep(quiet) // nothing to wait on: a paused queue claims nothing
	assert.Equal(t, job.Waiting, f.get(t, j.ID).Status, "the paused worker takes no job")

	require.NoError(t, f.q.Resume(ctx, true))
	assert.True(t, waitFor(t, events, queue.EventResumed, "").Global)
	waitFor(t, events, queue.EventCompleted, j.ID)
	assert.False(t, worker.Paused())
}

func TestCancelFromAnotherQueueCancelsTheHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	cause := make(chan error, 1)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return "ignored", nil
	}))
	j := f.add(t, 1)[0]
	waitFor(t, events, queue.EventProcessing, j.ID)
	_, err := f.q.CancelJob(ctx, "changed my mind", j.ID)
	require.NoError(t, err)
	select {
	case err := <-cause:
		assert.ErrorIs(t, err, job.ErrCancelled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler in the other queue was not cancelled")
	}
	require.Eventually(t, func() bool { return worker.Running() == 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, job.Cancelled, f.get(t, j.ID).Status)
}

func TestJobAddedElsewhereStartsInAnIdleQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	started := make(chan time.Time, 1)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- time.Now()
		return nil, nil
	}))
	waitFor(t, events, queue.EventIdle, "")
	added := time.Now()
	f.add(t, 1)
	select {
	case at := <-started:
		assert.Less(t, at.Sub(added), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the idle worker never took the job added elsewhere")
	}
}
