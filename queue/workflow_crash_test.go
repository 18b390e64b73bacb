package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// TestHelperFlowWorkerProcess is not a test: it is the worker process that
// TestAWorkerKilledAfterAParentsOutcomeStrandsNoChild starts and kills. It processes the
// queue of RJQ_HELPER_FLOW_DB, at the address it is given (a proxy), completing each job
// with the result "parent result".
func TestHelperFlowWorkerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_FLOW_DB", "the worker process of TestAWorkerKilledAfterAParentsOutcomeStrandsNoChild",
		queue.Options{MasterInterval: -1})
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return "parent result", nil }))
	select {} // until killed
}

// A worker process SIGKILLed right after its parent's outcome reached the server (the
// proxy between them lets that write through and nothing after it: the worker never
// hears the answer, and never releases the child) strands nothing: a Queue Master's
// review releases the child, which runs once, with the parent's result.
func TestAWorkerKilledAfterAParentsOutcomeStrandsNoChild(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	parent := f.q.CreateJob("p")
	child := f.q.CreateJob("c").SetDependsOn(parent.ID)
	_, err := f.q.AddJob(ctx, parent, child)
	require.NoError(t, err)

	proxy, err := wirecount.Start(f.srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	// The outcome write names the job and sets its dateFinished; no claim or heartbeat does.
	fired := proxy.SilenceAfter(parent.ID, "dateFinished", string(job.Completed))
	cmd := helperProcess(t, "TestHelperFlowWorkerProcess", "RJQ_HELPER_FLOW_DB", f.db, proxy.Addr())
	select {
	case <-fired:
	case <-time.After(45 * time.Second):
		t.Fatal("the worker process wrote no outcome in 45 s")
	}
	require.Eventually(t, func() bool { return f.get(t, parent.ID).Status == job.Completed },
		10*time.Second, 10*time.Millisecond, "the outcome reached the server")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Equal(t, job.Blocked, f.get(t, child.ID).Status, "the killed worker released nothing")

	master := newQueue(t, f, &queue.Options{MasterInterval: time.Second})
	events := master.Events(ctx, queue.EventCompleted)
	runs := make(chan string, 4)
	require.NoError(t, master.Process(func(_ context.Context, j *job.Job) (any, error) {
		var v string
		if err := j.ParentResult(parent.ID, &v); err != nil {
			return nil, err
		}
		runs <- v
		return nil, nil
	}))
	waitFor(t, events, queue.EventCompleted, child.ID)
	assert.Equal(t, "parent result", <-runs)
	got := f.get(t, child.ID)
	assert.Equal(t, 1, got.ProcessCount, "run once")
	released := 0
	for _, e := range got.Log {
		if e.Message == job.MessageReleased {
			released++
		}
	}
	assert.Equal(t, 1, released, "released once")
}
