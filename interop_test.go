package rjq_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// nodeQueue runs the original Node.js library (testdata/node-interop) on a queue, as a
// Node.js worker sharing it would. It skips when Node.js or the npm registry is missing.
type nodeQueue struct {
	dir  string
	srv  testserver.Server
	db   string
	name string
}

func newNodeQueue(t *testing.T, srv testserver.Server, db, name string) nodeQueue {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the Node.js interoperability test needs %s on PATH", tool)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "interop.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "node-interop", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("installing rethinkdb-job-queue 3.1.7 from the npm registry failed (offline?): %v\n%s", err, out)
	}
	return nodeQueue{dir: dir, srv: srv, db: db, name: name}
}

// run runs interop.js in mode and returns what it printed.
func (n nodeQueue) run(t *testing.T, mode string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"interop.js", mode, n.srv.Host, strconv.Itoa(n.srv.Port), n.db, n.name}, args...)...)
	cmd.Dir = n.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node interop.js %s: %s", mode, stderr.String())
	return strings.TrimSpace(string(out))
}

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
	node := newNodeQueue(t, srv, db, name)

	t.Run("a Node.js worker runs a Go job", func(t *testing.T) {
		events := q.Events(ctx, queue.EventActive, queue.EventCompleted)
		j := q.CreateJob(map[string]any{"to": "ann"}).SetPriority(job.High)
		_, err := q.AddJob(ctx, j)
		require.NoError(t, err)
		assert.Equal(t, "completed "+j.ID, node.run(t, "process"))

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
		id := node.run(t, "add", "hello")
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
