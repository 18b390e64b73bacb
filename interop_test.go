package rjq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Go and Node.js workers share one queue: each processes the other's jobs, reads the
// other's documents, and the Go queue raises the Node.js worker's events.
func TestNodeWorkersShareTheQueue(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	const name = "shared"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := queue.New(ctx, connectTo(srv, db), &queue.Options{Name: name, DatabaseInitDelay: -1, MasterInterval: -1})
	require.NoError(t, err)
	defer q.Stop(ctx)
	require.NoError(t, q.Ready(ctx))
	node := testserver.Node(t, srv, db, name)

	t.Run("a Node.js worker runs a Go job", func(t *testing.T) {
		events := q.Events(ctx, queue.EventActive, queue.EventCompleted)
		j := q.CreateJob(map[string]any{"to": "ann"}).SetPriority(job.High)
		_, err := q.AddJob(ctx, j)
		require.NoError(t, err)
		assert.Equal(t, "completed "+j.ID, node.Run(t, "process"))

		got, err := q.GetJob(ctx, j.ID)
		require.NoError(t, err)
		done := got[0]
		assert.Equal(t, job.Completed, done.Status)
		assert.Equal(t, 100.0, done.Progress)
		assert.Equal(t, 1, done.ProcessCount)
		assert.Equal(t, `node did {"to":"ann"}`, done.GetLastLog().Data)
		assert.NotEqual(t, q.ID(), done.QueueID)
		// Node's completion moves progress from 0 to 100 as well: it must still be raised
		// as completed here, not as progress.
		for _, typ := range []queue.EventType{queue.EventActive, queue.EventCompleted} {
			select {
			case e := <-events:
				assert.Equal(t, typ, e.Type)
				assert.Equal(t, j.ID, e.JobID)
				assert.False(t, e.Local)
				assert.Equal(t, done.QueueID, e.QueueID)
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s event from the Node.js worker", typ)
			}
		}
	})

	t.Run("a Go worker runs a Node.js job", func(t *testing.T) {
		id := node.Run(t, "add", "hello")
		require.True(t, job.ValidID(id), "node printed %q", id)
		got, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		nj := got[0]
		assert.Equal(t, job.Waiting, nj.Status)
		assert.Equal(t, job.High, nj.Priority)
		assert.Equal(t, "node-job", nj.Name)
		assert.Equal(t, "hello", nj.Data)
		assert.Equal(t, map[string]any{"from": "node"}, nj.Fields, "a Node.js object payload's other keys")

		events := q.Events(ctx, queue.EventCompleted)
		ran := make(chan *job.Job, 1)
		require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) {
			ran <- j
			return "go did it", nil
		}))
		select {
		case j := <-ran:
			assert.Equal(t, id, j.ID)
		case <-time.After(20 * time.Second):
			t.Fatal("the Go worker did not run the Node.js job")
		}
		e := <-events
		assert.Equal(t, id, e.JobID)
		got, err = q.GetJob(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, job.Completed, got[0].Status)
		assert.Equal(t, "node", got[0].Fields["from"], "the foreign field survived the Go worker's writes")
	})
}
