package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestQuickstart(t *testing.T) {
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: testserver.DB(t)}, &out))
	assert.Regexp(t, regexp.MustCompile(`^added job ([0-9a-f-]{36}) \(waiting, priority high\)
sending "Welcome" to ann@example.com
job ([0-9a-f-]{36}) completed
summary: \{Waiting:0 Active:0 Completed:1 Cancelled:0 Failed:0 Terminated:0 Total:1\}
$`), out.String())
}
