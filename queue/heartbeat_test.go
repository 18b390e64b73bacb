package queue_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// TestHelperWorkerProcess is not a test: it is the worker process that
// TestAKilledWorkersJobIsRecoveredInSeconds starts and kills. It processes the queue of
// RJQ_HELPER_DB with heartbeats every second and handlers that never return.
func TestHelperWorkerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_DB", "the worker process of TestAKilledWorkersJobIsRecoveredInSeconds",
		queue.Options{MasterInterval: -1, Heartbeat: time.Second})
	require.NoError(t, q.Process(func(ctx context.Context, _ *job.Job) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	select {} // until killed
}

func TestAKilledWorkersJobIsRecoveredInSeconds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Heartbeat: time.Second})
	j := f.add(t, 1)[0]
	require.Equal(t, job.DefaultTimeout, j.Timeout, "a job with the default five-minute timeout")

	cmd := helperProcess(t, "TestHelperWorkerProcess", "RJQ_HELPER_DB", f.db, net.JoinHostPort(f.srv.Host, strconv.Itoa(f.srv.Port)))

	require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Active },
		30*time.Second, 50*time.Millisecond, "the worker process claims the job")
	workers, err := f.q.Workers(testContext(t))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		workers, err = f.q.Workers(testContext(t))
		return err == nil && len(workers) == 1 && workers[0].Running == 1
	}, 10*time.Second, 100*time.Millisecond, "the worker lists itself, running one job")
	assert.Equal(t, 1, workers[0].Concurrency)
	assert.NotEqual(t, f.q.ID(), workers[0].QueueID)

	lease := f.get(t, j.ID).DateEnable
	assert.Less(t, time.Until(lease), 5*time.Second, "the running job's lease is short")
	assert.Greater(t, time.Until(lease), time.Duration(0), "and in the future while its worker lives")

	events := f.q.Events(testContext(t), queue.EventCompleted)
	require.NoError(t, cmd.Process.Kill())
	killed := time.Now()
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) { return "recovered", nil }))
	waitFor(t, events, queue.EventCompleted, j.ID)
	took := time.Since(killed)
	assert.Less(t, took, 15*time.Second, "the job of the killed worker completes elsewhere within seconds")
	t.Log(fmt.Sprintf("recovered and completed %v after the kill", took.Round(time.Millisecond)))

	require.Eventually(t, func() bool {
		workers, err = f.q.Workers(testContext(t))
		if err != nil {
			return false
		}
		for _, w := range workers {
			if w.QueueID != f.q.ID() {
				return false
			}
		}
		return true
	}, 15*time.Second, 200*time.Millisecond, "the dead worker's entry is pruned")
}
