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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testserver"
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
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		&queue.Options{DatabaseInitDelay: -1, MasterInterval: -1})
	require.NoError(t, err)
	defer func() { _ = q.Stop(context.Background()) }()
	require.NoError(t, q.Ready(ctx))
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
