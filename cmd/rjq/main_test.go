package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// binary builds rjq once per test run, so the tests run it as a user would.
func binary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rjq")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// newQueue starts a ready queue with opts on a database of the test's own, stopped when
// the test ends, and returns it with its database, the server's address for --addr and a
// context that ends with the test.
func newQueue(t *testing.T, opts *queue.Options) (*queue.Queue, string, string, context.Context) {
	t.Helper()
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	require.NoError(t, q.Ready(ctx))
	return q, db, net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port)), ctx
}

type result struct {
	stdout, stderr string
	code           int
}

func rjq(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "RJQ_ADDR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

func TestCommandsAgainstAQueue(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	jobs, err := q.AddJob(ctx, q.CreateJob("a"), q.CreateJob("b"), q.CreateJob("c").SetName("nightly"))
	require.NoError(t, err)
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}

	res := rjq(t, bin, append(base, "--json", "summary")...)
	require.Equal(t, 0, res.code, res.stderr)
	var counts map[string]int
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &counts))
	assert.Equal(t, map[string]int{"waiting": 3, "active": 0, "completed": 0, "cancelled": 0, "failed": 0, "terminated": 0, "total": 3}, counts)

	res = rjq(t, bin, append(base, "summary")...)
	assert.Contains(t, res.stdout, "waiting")

	res = rjq(t, bin, append(base, "list", "--name", "nightly")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, jobs[2].ID)
	assert.NotContains(t, res.stdout, jobs[0].ID)

	res = rjq(t, bin, append(base, "cancel", jobs[0].ID, "--reason", "from the test")...)
	require.Equal(t, 0, res.code, res.stderr)
	got, err := q.GetJob(ctx, jobs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, job.Cancelled, got[0].Status)
	assert.Equal(t, "from the test", got[0].GetLastLog().Message)

	res = rjq(t, bin, append(base, "show", jobs[0].ID)...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "from the test")

	res = rjq(t, bin, append(base, "queues")...)
	assert.Contains(t, res.stdout, queue.DefaultName)

	// Bad input: a clear message, a non-zero exit, nothing written.
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{append(base, "show", "not-an-id"), exitUsage, "not a job id"},
		{append(base, "cancel", job.UniqueID("never")), exitNotFound, "not found"},
		{append(base, "--queue", "nope", "summary"), exitUsage, "no queue"},
		{[]string{"--addr", "127.0.0.1:1", "summary"}, exitFailed, "cannot reach"},
		{append(base, "frobnicate"), exitUsage, "unknown command"},
		{append([]string{"--tls-ca", filepath.Join(t.TempDir(), "missing.pem")}, append(base, "summary")...), exitUsage, "--tls-ca"},
		{append([]string{"--tls-ca", notPEM}, append(base, "summary")...), exitUsage, "no PEM certificate"},
	} {
		res := rjq(t, bin, tc.args...)
		assert.Equal(t, tc.code, res.code, "%v: %s", tc.args, res.stderr)
		assert.Contains(t, res.stderr, tc.says, "%v", tc.args)
	}
	s, err := q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Waiting, "bad input changed nothing")
	assert.Equal(t, 1, s.Cancelled)
}

// A table that exists but is not a queue's: every command says so and exits 2, and none
// writes to it: no State Document, no index, no other table.
func TestATableThatIsNotAQueue(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	s := testserver.Session(t)
	_, err := r.DBCreate(db).RunWrite(s)
	require.NoError(t, err)
	_, err = r.DB(db).TableCreate("users").RunWrite(s)
	require.NoError(t, err)
	ann := map[string]any{"id": "ann", "status": "waiting", "name": "Ann"}
	_, err = r.DB(db).Table("users").Insert(ann).RunWrite(s)
	require.NoError(t, err)

	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--queue", "users"}
	id := job.UniqueID("ann")
	for _, args := range [][]string{
		{"summary"}, {"list"}, {"show", id}, {"cancel", id}, {"reanimate", id}, {"remove", id},
		{"pause"}, {"resume"}, {"review"}, {"watch"}, {"web", "--listen", "127.0.0.1:0", "--actions"},
	} {
		res := rjq(t, bin, append(base, args...)...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res.stderr)
		assert.Contains(t, res.stderr, `table "users" of database "`+db+`" is not a job queue`, "%v", args)
		assert.Empty(t, res.stdout, "%v", args)
	}

	var docs []map[string]any
	require.NoError(t, readAll(context.Background(), s, r.DB(db).Table("users"), &docs))
	assert.Equal(t, []map[string]any{ann}, docs, "the table's documents are untouched")
	var indexes, tables []string
	require.NoError(t, readAll(context.Background(), s, r.DB(db).Table("users").IndexList(), &indexes))
	assert.Empty(t, indexes, "no index was created")
	require.NoError(t, readAll(context.Background(), s, r.DB(db).TableList(), &tables))
	assert.Equal(t, []string{"users"}, tables, "no table was created")
}

// rjq reads a queue that the Node.js library created and wrote: its table, indexes, job
// documents and log entries are the original's own.
func TestCommandsOnAQueueWrittenByNode(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	const name = "nodeJobs"
	nodeQueue := testserver.Node(t, srv, db, name)
	run := func(mode string, args ...string) string { return nodeQueue.Run(t, mode, args...) }
	ids := []string{run("add", "hello"), run("add", "world")}
	for _, id := range ids {
		require.True(t, job.ValidID(id), "node printed %q", id)
	}
	done := strings.TrimPrefix(run("process"), "completed ")
	require.Contains(t, ids, done)
	waiting := ids[0]
	if waiting == done {
		waiting = ids[1]
	}

	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--queue", name}

	res := rjq(t, bin, append(base, "--json", "summary")...)
	require.Equal(t, 0, res.code, res.stderr)
	var counts map[string]int
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &counts))
	assert.Equal(t, map[string]int{"waiting": 1, "active": 0, "completed": 1, "cancelled": 0, "failed": 0, "terminated": 0, "total": 2}, counts)

	res = rjq(t, bin, append(base, "summary")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, name+`\s+1\s+0\s+1\s+0\s+0\s+0\s+2`, res.stdout)

	res = rjq(t, bin, append(base, "list")...)
	require.Equal(t, 0, res.code, res.stderr)
	for _, line := range []struct{ id, status, progress string }{{waiting, "waiting", "0%"}, {done, "completed", "100%"}} {
		assert.Regexp(t, line.id+`\s+node-job\s+`+line.status+`\s+high\s+`+line.progress, res.stdout)
	}

	res = rjq(t, bin, append(base, "--json", "list", "--status", "completed")...)
	require.Equal(t, 0, res.code, res.stderr)
	var listed []listing.Job
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &listed))
	require.Len(t, listed, 1)
	assert.Equal(t, done, listed[0].ID)

	res = rjq(t, bin, append(base, "show", done)...)
	require.Equal(t, 0, res.code, res.stderr)
	for _, want := range []string{"status    completed", "priority  high", "runs      1", job.MessageAdded, job.MessageActive, job.MessageCompleted} {
		assert.Contains(t, res.stdout, want)
	}

	res = rjq(t, bin, append(base, "--json", "show", waiting)...)
	require.Equal(t, 0, res.code, res.stderr)
	var shown []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
	require.Len(t, shown, 1)
	assert.Equal(t, "waiting", shown[0]["status"])
	assert.Equal(t, "node-job", shown[0]["name"])
	assert.Contains(t, []any{"hello", "world"}, shown[0]["data"])
	assert.Equal(t, "node", shown[0]["from"], "the document's own fields, as stored")
}
