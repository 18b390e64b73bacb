package queue_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Some tests kill a worker process for real: they start this test binary again, to run
// one "helper" test alone, which is the worker (helperProcess), and which opens its
// queue on the database and at the address it is given (helperQueue).

// helperProcess starts this test binary again to run only the test named test, with the
// database db and the server address addr (a proxy's, say); it is killed when the test
// ends, if the test has not killed it.
func helperProcess(t *testing.T, test, dbEnv, db, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), dbEnv+"="+db, "RJQ_TEST_ADDR="+addr, "RJQ_TEST_REQLITE=0")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// helperQueue is the queue of a helper process: on the database named by the variable
// dbEnv, at RJQ_TEST_ADDR. Without the variable, the helper is not wanted: it skips.
func helperQueue(t *testing.T, dbEnv, what string, opts queue.Options) *queue.Queue {
	t.Helper()
	db := os.Getenv(dbEnv)
	if db == "" {
		t.Skip(what)
	}
	host, portText, _ := net.SplitHostPort(os.Getenv("RJQ_TEST_ADDR"))
	port, _ := strconv.Atoi(portText)
	q, err := queue.New(context.Background(), &queue.ConnectOptions{Host: host, Port: port, DB: db}, queuetest.Options(opts))
	require.NoError(t, err)
	return q
}
