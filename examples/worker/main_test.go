package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestWorkerDrainsTheDemoJobs(t *testing.T) {
	ctx := queuetest.Context(t, 2*time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out, 6, true))
	text := out.String()
	assert.Equal(t, 5, strings.Count(text, "completed "), text)
	assert.Equal(t, 1, strings.Count(text, "failed "), "the flaky job fails once: %s", text)
	assert.Equal(t, 1, strings.Count(text, "cancelled "), text)
	assert.Contains(t, text, "every job is finished")
	assert.True(t, strings.HasSuffix(text, "stopping: waiting for running jobs\n"), text)
}

// lockedBuffer is written by the worker and read by the test at the same time.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWorkerStopsGracefullyWhenInterrupted(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, queuetest.Connect(t), &out, 0, false)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "processing queue images") },
		30*time.Second, 10*time.Millisecond)
	interrupt() // Ctrl-C
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the worker did not stop")
	}
	assert.Contains(t, out.String(), "stopping")
}
