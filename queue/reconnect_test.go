package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The server dies under running queues and comes back empty (as reqlite always does): the
// queues report errors meanwhile, re-create their database, table and indexes, reopen
// their feeds and process a job added afterwards, without being restarted themselves.
func TestQueuesSurviveAServerRestart(t *testing.T) {
	if raceDetector {
		// Not this library's race: the driver reads and writes a pool slot without a lock
		// when two queries redial at once (pool.go:122/127, rethinkdb/rethinkdb-go#488,
		// open). .ci/run runs this test again without -race.
		t.Skip("rethinkdb-go v6.2.1 has a known data race when it redials (rethinkdb/rethinkdb-go#488); run without -race")
	}
	t.Parallel()
	srv := testserver.Private(t)
	ctx := testContext(t)
	connect := &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: "restart"}
	open := func(opts *queue.Options) *queue.Queue {
		opts.DatabaseInitDelay = -1
		q, err := queue.New(ctx, connect, opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		require.NoError(t, q.Ready(ctx))
		return q
	}
	worker := open(&queue.Options{MasterInterval: -1})
	adder := open(&queue.Options{MasterInterval: -1})
	events := worker.Events(ctx)
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) { return "ok", nil }))
	waitFor(t, events, queue.EventIdle, "")

	srv.Stop()
	e := waitFor(t, events, queue.EventError, "")
	assert.Error(t, e.Err)
	srv.Start(t)

	// The adder's first calls may come before its table is back; the feed's reconnection
	// re-creates it.
	var j *job.Job
	require.Eventually(t, func() bool {
		j = adder.CreateJob("after the restart")
		_, err := adder.AddJob(ctx, j)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
	waitFor(t, events, queue.EventCompleted, j.ID)
	got, err := adder.GetJob(ctx, j.ID)
	require.NoError(t, err)
	assert.Equal(t, job.Completed, got[0].Status)
}
