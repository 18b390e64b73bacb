package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Pause must also wait for a claim that is under way: no handler may start after Pause has
// returned.
func TestPauseWaitsForAClaimUnderWay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	ctx := testContext(t)
	var mu sync.Mutex
	var starts []time.Time
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil, nil
	}))
	for round := range 8 {
		f.add(t, 1) // wakes the loop, which claims at once
		require.NoError(t, f.q.Pause(ctx, false))
		paused := time.Now()
		time.Sleep(50 * time.Millisecond) // a late start would show up here
		mu.Lock()
		for _, at := range starts {
			assert.False(t, at.After(paused), "round %d: a handler started after Pause returned", round)
		}
		mu.Unlock()
		require.NoError(t, f.q.Resume(ctx, false))
	}
}

// Stop must not lose jobs whose claim was under way: each job is either still waiting or
// was run to the end, never left active with nobody running it.
func TestStopDuringAClaimLosesNoJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for round := range 6 {
		q := newQueue(t, f, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
		require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))
		j := f.add(t, 1)[0]
		q.SetConcurrency(2) // one more wake, to race Stop with a claim
		require.NoError(t, q.Stop(ctx))
		status := f.get(t, j.ID).Status
		assert.Contains(t, []job.Status{job.Waiting, job.Completed}, status, "round %d", round)
		if status == job.Waiting {
			_, err := f.q.RemoveJob(ctx, j.ID)
			require.NoError(t, err)
		}
	}
}

// A handler that ignores its context and outlives its timeout is still waited for by Stop.
func TestStopWaitsForAHandlerPastItsTimeout(t *testing.T) {
	noLeaks(t)
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetTimeout(100 * time.Millisecond).SetRetryMax(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	release := make(chan struct{})
	returned := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		defer close(returned)
		<-release // ignores ctx
		return nil, nil
	}))
	waitFor(t, events, queue.EventTerminated, j.ID)
	stopped := make(chan error, 1)
	go func() { stopped <- f.q.Stop(testContext(t)) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler was still running")
	case <-time.After(quiet):
	}
	close(release)
	require.NoError(t, <-stopped)
	select {
	case <-returned:
	default:
		t.Fatal("Stop returned before the handler did")
	}
}

// A handler that passes its job back after the job was cancelled elsewhere must not bring
// the job back to life.
func TestPassBackDoesNotUndoACancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{NoChangeFeed: true}) // the worker does not hear the cancel
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	cancelled := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-cancelled
		return j, nil
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	f.setRaw(t, j.ID, map[string]any{"status": "cancelled", "queueId": "elsewhere"})
	close(cancelled)
	require.Eventually(t, func() bool { return f.q.Running() == 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, job.Cancelled, f.get(t, j.ID).Status)
}

// A job reanimated by another queue wakes an idle worker through the feed.
func TestReanimatedElsewhereWakesAnIdleQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	_, err := f.q.CancelJob(ctx, "later", j.ID)
	require.NoError(t, err)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))
	waitFor(t, events, queue.EventIdle, "")
	_, err = f.q.ReanimateJob(ctx, time.Time{}, j.ID)
	require.NoError(t, err)
	e := waitFor(t, events, queue.EventCompleted, j.ID)
	assert.True(t, e.Local)
}

// A document the claim cannot update (hand-written garbage) must not stop good jobs from
// running, nor make the queue spin.
func TestABadDocumentDoesNotStopGoodJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 3, MasterInterval: -1})
	events := f.q.Events(testContext(t), queue.EventCompleted)
	errs := f.q.Events(testContext(t), queue.EventError)
	jobs := f.add(t, 2)
	bad := f.add(t, 1)[0]
	f.setRaw(t, bad.ID, map[string]any{"timeout": "five minutes", "priority": 10})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))
	waitForAll(t, events, queue.EventCompleted, jobs...)
	reported := waitFor(t, errs, queue.EventError, bad.ID)
	assert.ErrorIs(t, reported.Err, job.ErrInvalidDocument, "the bad document is reported, with its id")
	assert.Equal(t, "waiting", f.rawDoc(t, bad.ID)["status"], "the bad document is left as it was")
}

// A job cancelled and reanimated at once by another queue: the run the cancel ended is
// cancelled, the job is claimed again and finishes; nothing is left active without a
// handler.
func TestCancelAndReanimateElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1, Concurrency: 2})
	events := worker.Events(ctx)
	first := make(chan error, 1)
	var calls sync.Mutex
	n := 0
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		calls.Lock()
		n++
		call := n
		calls.Unlock()
		if call == 1 {
			<-ctx.Done()
			first <- context.Cause(ctx)
			return nil, ctx.Err()
		}
		return "second run", nil
	}))
	j := f.add(t, 1)[0]
	waitFor(t, events, queue.EventProcessing, j.ID)
	_, err := f.q.CancelJob(ctx, "restart it", j.ID)
	require.NoError(t, err)
	_, err = f.q.ReanimateJob(ctx, time.Time{}, j.ID)
	require.NoError(t, err)
	assert.ErrorIs(t, <-first, job.ErrCancelled)
	require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Completed }, 15*time.Second, 20*time.Millisecond)
	assert.Equal(t, 2, f.get(t, j.ID).ProcessCount)
}

// A job failed by another queue's review while it runs here (its worker is too slow, say)
// has its handler cancelled: the run has lost it.
func TestReviewElsewhereEndsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	cause := make(chan error, 1)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return nil, nil
		}
	}))
	j := f.q.CreateJob(nil).SetRetryMax(0)
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)
	waitFor(t, events, queue.EventProcessing, j.ID)
	f.setRaw(t, j.ID, map[string]any{"dateEnable": time.Now().Add(-time.Minute)}) // overdue
	res, err := f.q.Review(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Reviewed)
	select {
	case err := <-cause:
		assert.ErrorIs(t, err, job.ErrCancelled)
	case <-time.After(10 * time.Second):
		t.Fatal("the run of a job failed elsewhere was not ended")
	}
	assert.Equal(t, job.Terminated, f.get(t, j.ID).Status, "the review's outcome stands")
}

// A Pause waiting for running jobs ends when the queue is resumed meanwhile, without a
// paused event.
func TestResumeEndsAWaitingPause(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	events := f.q.Events(ctx)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	j := f.add(t, 1)[0]
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-release
		return nil, nil
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	paused := make(chan error, 1)
	go func() { paused <- f.q.Pause(ctx, false) }()
	waitFor(t, events, queue.EventPausing, "")
	require.NoError(t, f.q.Resume(ctx, false))
	select {
	case err := <-paused:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Pause kept waiting after a resume")
	}
	deadline := time.After(quiet)
	for watching := true; watching; {
		select {
		case e := <-events:
			assert.NotEqual(t, queue.EventPaused, e.Type, "no paused event for a pause that was resumed")
		case <-deadline:
			watching = false
		}
	}
	assert.False(t, f.q.Paused())
}
