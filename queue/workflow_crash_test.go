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

// TestHelperFlowWorkerProcess is not a test: it is the worker process that the crash tests
// of workflows start and kill. It processes the queue of RJQ_HELPER_FLOW_DB, at the
// address it is given (a proxy), completing each job with the result "parent result",
// with a heartbeat of 2 s (a run's lease ends 2 s after its last renewal), at concurrency 2
// (a claim of its one job comes back short: it is then idle, with a slot free).
func TestHelperFlowWorkerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_FLOW_DB", "the worker process of the crash tests of workflows",
		queue.Options{MasterInterval: -1, Heartbeat: 2 * time.Second, Concurrency: 2})
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return "parent result", nil }))
	select {} // until killed
}

// killAfterOutcome starts the worker process on f's table through a proxy that lets the
// outcome write of job id through and nothing after it (the worker never hears its
// answer), waits until that outcome is in the table, and kills the worker.
func killAfterOutcome(t *testing.T, f fixture, id string) {
	t.Helper()
	proxy, err := wirecount.Start(f.srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	// The outcome write names the job and sets its dateFinished; no claim or heartbeat does.
	fired := proxy.SilenceAfter(id, "dateFinished", string(job.Completed))
	cmd := helperProcess(t, "TestHelperFlowWorkerProcess", "RJQ_HELPER_FLOW_DB", f.db, proxy.Addr())
	select {
	case <-fired:
	case <-time.After(45 * time.Second):
		t.Fatal("the worker process wrote no outcome in 45 s")
	}
	require.Eventually(t, func() bool { return f.get(t, id).Status == job.Completed },
		10*time.Second, 10*time.Millisecond, "the outcome reached the server")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
}

// runChild processes f's table with a Queue Master until child completed, and returns
// what its handler read of parent's result, and how many times the handler ran.
func runChild(t *testing.T, f fixture, parent, child string) (result string, runs int) {
	t.Helper()
	master := newQueue(t, f, &queue.Options{MasterInterval: time.Second})
	events := master.Events(testContext(t), queue.EventCompleted)
	got := make(chan string, 4)
	require.NoError(t, master.Process(func(_ context.Context, j *job.Job) (any, error) {
		var v string
		if j.ID == child {
			if err := j.ParentResult(parent, &v); err != nil {
				return nil, err
			}
			got <- v
		}
		return nil, nil
	}))
	waitFor(t, events, queue.EventCompleted, child)
	require.NoError(t, master.Stop(testContext(t)))
	close(got)
	for v := range got {
		result, runs = v, runs+1
	}
	return result, runs
}

// releasedTimes counts the release entries in job id's log.
func releasedTimes(t *testing.T, f fixture, id string) int {
	t.Helper()
	n := 0
	for _, e := range f.get(t, id).Log {
		if e.Message == job.MessageReleased {
			n++
		}
	}
	return n
}

// A worker process SIGKILLed right after its parent's outcome reached the server, before
// it released the child (the child has a second parent, completed before: a parent's
// outcome write releases the children of that parent alone), strands nothing: a Queue
// Master's review releases the child, which runs once, with both parents' results.
func TestAWorkerKilledAfterAParentsOutcomeStrandsNoChild(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	worker := newQueue(t, f, &queue.Options{MasterInterval: -1})
	first := worker.CreateJob("first")
	events := worker.Events(ctx, queue.EventCompleted)
	_, err := worker.AddJob(ctx, first)
	require.NoError(t, err)
	require.NoError(t, worker.Process(func(context.Context, *job.Job) (any, error) { return "first result", nil }))
	waitFor(t, events, queue.EventCompleted, first.ID)
	require.NoError(t, worker.Stop(ctx))

	parent := f.q.CreateJob("p")
	child := f.q.CreateJob("c").SetDependsOn(parent.ID, first.ID)
	_, err = f.q.AddJob(ctx, parent, child)
	require.NoError(t, err)
	killAfterOutcome(t, f, parent.ID)
	assert.Equal(t, job.Blocked, f.get(t, child.ID).Status, "the killed worker released nothing")

	result, runs := runChild(t, f, parent.ID, child.ID)
	assert.Equal(t, "parent result", result)
	assert.Equal(t, 1, runs, "run once")
	assert.Equal(t, 1, f.get(t, child.ID).ProcessCount, "claimed once")
	assert.Equal(t, 1, releasedTimes(t, f, child.ID), "released once")
}

// A worker process idle with a free slot releases and claims a parent's only child in
// the parent's outcome write. SIGKILLed right after that write, it leaves the child active
// in its name and never runs it: a Queue Master's review takes the child back when its
// lease ends, as any job of a dead worker, and the child runs once, with the parent's
// result.
func TestAWorkerKilledAfterAnOutcomeThatClaimedTheChildStrandsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	parent := f.q.CreateJob("p")
	child := f.q.CreateJob("c").SetDependsOn(parent.ID)
	_, err := f.q.AddJob(ctx, parent, child)
	require.NoError(t, err)
	killAfterOutcome(t, f, parent.ID)
	got := f.get(t, child.ID)
	require.Equal(t, job.Active, got.Status, "claimed with the parent's outcome")
	assert.Equal(t, 1, releasedTimes(t, f, child.ID))

	result, runs := runChild(t, f, parent.ID, child.ID)
	assert.Equal(t, "parent result", result)
	assert.Equal(t, 1, runs, "run once")
	assert.Equal(t, 1, releasedTimes(t, f, child.ID), "released once")
}
