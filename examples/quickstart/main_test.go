package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestQuickstart(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out))
	assert.Regexp(t, regexp.MustCompile(`^added job ([0-9a-f-]{36}) \(waiting, priority high\)
sending "Welcome" to ann@example.com
job ([0-9a-f-]{36}) completed
summary: \{Waiting:0 Active:0 Completed:1 Cancelled:0 Failed:0 Terminated:0 Total:1\}
$`), out.String())
}
