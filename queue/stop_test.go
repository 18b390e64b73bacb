package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// noLeaks checks, once the test and its cleanups are done (its sessions closed), that it
// left no goroutine behind. Tests that use it are not parallel: goleak counts every
// goroutine of the process.
func noLeaks(t *testing.T) {
	testserver.Get(t) // a server this binary starts is not the test's leak
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func TestStopWaitsForRunningHandlers(t *testing.T) {
	noLeaks(t)
	f := newFixture(t, &queue.Options{Concurrency: 2})
	ctx := testContext(t)
	events := f.q.Events(ctx)
	jobs := f.add(t, 2)
	release := make(chan struct{})
	progress := make(chan error, 2)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-release
		progress <- j.UpdateProgress(ctx, 50) // a running job's own calls still work while stopping
		return "done", nil
	}))
	waitForAll(t, events, queue.EventProcessing, jobs...)
	stopped := make(chan error, 1)
	go func() { stopped <- f.q.Stop(ctx) }()
	waitFor(t, events, queue.EventStopping, "")
	_, err := f.q.AddJob(ctx, f.q.CreateJob(nil))
	assert.ErrorIs(t, err, queue.ErrStopped, "no new calls once stopping")
	select {
	case <-stopped:
		t.Fatal("Stop returned while handlers were running")
	case <-time.After(quiet):
	}
	close(release)
	require.NoError(t, <-stopped)
	for range jobs {
		assert.NoError(t, <-progress)
	}
	for _, j := range jobs {
		assert.Equal(t, "completed", f.rawDoc(t, j.ID)["status"], "running jobs finish before Stop returns")
	}
}

func TestStopCancelsHandlersWhenItsContextEnds(t *testing.T) {
	noLeaks(t)
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	cause := make(chan error, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, f.q.Stop(short), context.DeadlineExceeded)
	assert.ErrorIs(t, <-cause, queue.ErrStopped)
	got := reader(t, f).get(t, j.ID)
	assert.Equal(t, job.Waiting, got.Status, "a job cut off by Stop is handed back before Stop returns")
	assert.Zero(t, got.RetryCount, "no retry spent")
	assert.False(t, got.DateEnable.After(time.Now()), "due again at once")
	last := got.GetLastLog()
	require.NotNil(t, last)
	assert.Equal(t, job.MessageWorkerStopped, last.Message)
	assert.Equal(t, job.Warning, last.Type)
	assert.Equal(t, job.Waiting, last.Status)
}

// A handler that completes its job after Stop's context has ended (it ignores the
// cancellation) has its outcome written: the job is not handed back.
func TestStopWritesAnOutcomeThatCameAfterItsContextEnded(t *testing.T) {
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		return "finished anyway", nil
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, f.q.Stop(short), context.DeadlineExceeded)
	assert.Equal(t, job.Completed, reader(t, f).get(t, j.ID).Status)
}

// reader is f with a queue of its own on f's table, to read it once f's queue has stopped.
func reader(t *testing.T, f fixture) fixture {
	t.Helper()
	f.q = newQueue(t, f, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	return f
}
