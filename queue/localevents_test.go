package queue_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// A worker with LocalEventsOnly still does everything the changefeed makes it do (starts a
// job added elsewhere at once, ends a run cancelled or removed elsewhere, follows a global
// pause), and raises the events of its own work only.
func TestLocalEventsOnlyWorkerActsOnTheFeedAndRaisesItsOwnEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	other := f.q
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1, LocalEventsOnly: true, Concurrency: 2})
	events := worker.Events(ctx)
	var seen []queue.Event
	until := func(typ queue.EventType, id string) queue.Event {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case e := <-events:
				seen = append(seen, e)
				if e.Type == typ && (id == "" || e.JobID == id) {
					return e
				}
			case <-deadline:
				t.Fatalf("no %s event for job %q", typ, id)
			}
		}
	}
	// quit ends the runs that wait when the test fails before their job is cancelled.
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	started := make(chan time.Time, 4)
	causes := make(chan error, 4)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- time.Now()
		if j.Data == "wait" {
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
			case <-quit:
			}
		}
		return nil, nil
	}))
	until(queue.EventIdle, "")

	addedAt := time.Now()
	added, err := other.AddJob(ctx, other.CreateJob("quick"))
	require.NoError(t, err)
	select {
	case at := <-started:
		assert.Less(t, at.Sub(addedAt), 2*time.Second, "a job added elsewhere starts at once")
	case <-time.After(10 * time.Second):
		t.Fatal("the idle worker never took the job added elsewhere")
	}
	assert.True(t, until(queue.EventCompleted, added[0].ID).Local)

	for _, end := range []func(id string) error{
		func(id string) error { _, err := other.CancelJob(ctx, "elsewhere", id); return err },
		func(id string) error { _, err := other.RemoveJob(ctx, id); return err },
	} {
		running, err := other.AddJob(ctx, other.CreateJob("wait"))
		require.NoError(t, err)
		until(queue.EventProcessing, running[0].ID)
		require.NoError(t, end(running[0].ID))
		select {
		case err := <-causes:
			assert.ErrorIs(t, err, job.ErrCancelled)
		case <-time.After(10 * time.Second):
			t.Fatal("the run of a job cancelled or removed elsewhere was not ended")
		}
	}

	// Changes of other jobs elsewhere, which a queue without the option raises as events.
	later, err := other.AddJob(ctx, other.CreateJob("later").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	require.NoError(t, later[0].AddLog(ctx, nil, "note", "", ""))
	_, err = other.CancelJob(ctx, "no", later[0].ID)
	require.NoError(t, err)
	// The feed brings changes in order: once the pause made after them is followed, any
	// event of theirs would have been raised.
	require.NoError(t, other.Pause(ctx, true))
	assert.True(t, until(queue.EventPaused, "").Global)
	assert.True(t, worker.Paused())
	for _, e := range seen {
		if e.JobID != "" {
			assert.True(t, e.Local, "only events of its own work: %+v", e)
		}
	}
	require.NoError(t, other.Resume(ctx, true))
	until(queue.EventResumed, "")
	assert.False(t, worker.Paused())
}

// A queue follows the worker's feed until a listener asks for other queues' job events:
// then Events returns once the whole feed is open, and an event made right after reaches
// the listener. A listener of the queue's own events leaves it as it is.
func TestTheFeedWidensForAListenerOfOtherQueuesEvents(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	f, other, watcher, logs := feedWatcher(t)
	const widened = "changefeed widened"

	own := watcher.Events(ctx, queue.EventIdle, queue.EventPaused)
	require.NotNil(t, own)
	assert.NotContains(t, logs.String(), widened, "a listener of the queue's own events")

	for range 2 { // the second call finds the whole feed open
		cancelled := watcher.Events(ctx, queue.EventCancelled)
		assert.Contains(t, logs.String(), widened)
		added, err := other.AddJob(ctx, other.CreateJob("x").SetDateEnable(time.Now().Add(time.Hour)))
		require.NoError(t, err)
		_, err = other.CancelJob(ctx, "no", added[0].ID)
		require.NoError(t, err)
		e := waitFor(t, cancelled, queue.EventCancelled, added[0].ID)
		assert.False(t, e.Local)
		assert.Equal(t, other.ID(), e.QueueID)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), widened), "it widens once")

	// A queue with LocalEventsOnly never does.
	localLogs := &lockedBuffer{}
	local := newQueue(t, f, &queue.Options{MasterInterval: -1, LocalEventsOnly: true, Logger: slog.New(slog.NewTextHandler(localLogs, nil))})
	_ = local.Events(ctx)
	require.NoError(t, other.Pause(ctx, true)) // the State Document reaches it still
	require.Eventually(t, local.Paused, 10*time.Second, 10*time.Millisecond)
	assert.NotContains(t, localLogs.String(), widened)
}

// The whole feed narrows again once its last listener has gone (after the wait, which the
// test makes short), while the queue's processing goes on following it; the next listener
// widens it again.
func TestTheFeedNarrowsAgainWhenItsListenersHaveGone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, other, watcher, logs := feedWatcher(t)
	queue.SetNarrowAfter(watcher, 100*time.Millisecond)
	const widened, narrowed = "changefeed widened", "changefeed narrowed"
	count := func(s string) int { return strings.Count(logs.String(), s) }
	started := make(chan string, 4)
	require.NoError(t, watcher.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- j.ID
		return nil, nil
	}))

	stays, leaveStays := context.WithCancel(ctx)
	goes, leaveGoes := context.WithCancel(ctx)
	_ = watcher.Events(stays, queue.EventCompleted)
	_ = watcher.Events(goes, queue.EventCancelled)
	require.Equal(t, 1, count(widened))
	leaveGoes()
	assert.Never(t, func() bool { return count(narrowed) > 0 }, time.Second, 20*time.Millisecond, "one listener is left")
	leaveStays()
	require.Eventually(t, func() bool { return count(narrowed) == 1 }, 10*time.Second, 10*time.Millisecond)

	addedAt := time.Now()
	added, err := other.AddJob(ctx, other.CreateJob("x"))
	require.NoError(t, err)
	select {
	case id := <-started:
		assert.Equal(t, added[0].ID, id)
		assert.Less(t, time.Since(addedAt), 2*time.Second, "a job added elsewhere starts at once")
	case <-time.After(10 * time.Second):
		t.Fatal("the narrowed feed did not bring a job added elsewhere")
	}

	cancelled := watcher.Events(ctx, queue.EventCancelled)
	assert.Equal(t, 2, count(widened), "the next listener widens it again")
	later, err := other.AddJob(ctx, other.CreateJob("later").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	_, err = other.CancelJob(ctx, "no", later[0].ID)
	require.NoError(t, err)
	assert.False(t, waitFor(t, cancelled, queue.EventCancelled, later[0].ID).Local)
	assert.Equal(t, 1, count(narrowed))
}

// feedWatcher is a fixture whose queue (other) makes changes, and a second queue on its
// table (watcher) whose log lines go to logs, where its feed's switches are told.
func feedWatcher(t *testing.T) (f fixture, other, watcher *queue.Queue, logs *lockedBuffer) {
	f = newFixture(t, &queue.Options{MasterInterval: -1})
	logs = &lockedBuffer{}
	watcher = newQueue(t, f, &queue.Options{MasterInterval: -1, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return f, f.q, watcher, logs
}
