package queue_test

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// TestHelperStoppedWorkerProcess is not a test: it is the worker process that
// TestAWorkerStoppedWithCtrlCHandsItsJobBack starts and interrupts. It processes the queue
// of RJQ_HELPER_STOP_DB with a handler that runs until its context ends, and on SIGINT
// stops its queue with a context of one second, as a worker's main would.
func TestHelperStoppedWorkerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_STOP_DB", "the worker process of the hand-back test",
		queue.Options{MasterInterval: -1})
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	require.NoError(t, q.Process(func(ctx context.Context, _ *job.Job) (any, error) {
		<-ctx.Done() // a long job that honours its context
		return nil, ctx.Err()
	}))
	<-interrupted.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = q.Stop(ctx)
}

// A worker process stopped with Ctrl-C while its job runs (Stop's context: one second;
// the handler returns when its context ends) hands the job back: waiting by the time the
// process has exited, no retry spent, its group's running slot given back, and started
// at once by the next worker, an idle queue of this process, well before the job's lease
// (11 s) would have ended.
func TestAWorkerStoppedWithCtrlCHandsItsJobBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "tenant", 1))
	j := f.q.CreateJob("long").SetGroup("tenant")
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)
	cmd := helperProcess(t, "TestHelperStoppedWorkerProcess", "RJQ_HELPER_STOP_DB", f.db, f.srv.Addr)
	require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Active },
		30*time.Second, 20*time.Millisecond, "the worker process claims the job")

	next := newQueue(t, f, &queue.Options{MasterInterval: -1})
	started := make(chan time.Time, 2)
	require.NoError(t, next.Process(func(context.Context, *job.Job) (any, error) {
		started <- time.Now()
		return nil, nil
	}))
	require.NoError(t, next.Ready(ctx))
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait())
	exited := time.Now()

	got := f.get(t, j.ID)
	// Handed back before the worker process exited: waiting, unless the next worker has
	// taken it already (its log says it was handed back).
	assert.Contains(t, []job.Status{job.Waiting, job.Active, job.Completed}, got.Status)
	assert.Zero(t, got.RetryCount, "no retry spent")
	handedBack := false
	for _, e := range got.Log {
		handedBack = handedBack || e.Message == job.MessageWorkerStopped
		assert.NotEqual(t, job.MessageFailed, e.Message, "the run did not fail")
	}
	assert.True(t, handedBack, "the log says the worker stopped")
	select {
	case at := <-started:
		assert.Less(t, at.Sub(exited), 3*time.Second, "the next worker starts it at once, not after the lease")
	case <-time.After(8 * time.Second):
		t.Fatal("the next worker did not start the handed-back job within 8 s (the lease is 11 s)")
	}
}
