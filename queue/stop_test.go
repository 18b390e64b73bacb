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
	assert.Equal(t, "active", f.rawDoc(t, j.ID)["status"],
		"a job cut off by Stop stays active for the Master's review to recover")
}
