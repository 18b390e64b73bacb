package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestWatchLineText(t *testing.T) {
	for _, tc := range []struct {
		e    queue.Event
		want string
	}{
		{queue.Event{Type: queue.EventProgress, Progress: 42.4}, "42%"},
		{queue.Event{Type: queue.EventCancelled, Reason: "deadline passed"}, "deadline passed"},
		{queue.Event{Type: queue.EventCompleted}, ""},
		{queue.Event{Type: queue.EventTerminated, Reason: "disk full"}, "disk full"},
		{queue.Event{Type: queue.EventFailed, Err: errors.New("timeout")}, "timeout"},
	} {
		assert.Equal(t, tc.want, progressText(tc.e), "%+v", tc.e)
	}
}

// watch prints the error of a job that failed or was terminated in another process.
func TestWatchPrintsTheErrorOfFailedAndTerminatedJobs(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	cmd := exec.Command(binary(t), "--addr", addr, "--db", db, "watch")
	cmd.Env = append(os.Environ(), "RJQ_ADDR=")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	// wait reads watch's lines until one has all of words.
	wait := func(words ...string) string {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				require.True(t, ok, "watch ended")
				if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
					return line
				}
			case <-ctx.Done():
				t.Fatalf("watch printed no line with %q", words)
			}
		}
	}
	// Jobs added until watch shows one: it follows the table from then on.
	seen := make(chan struct{})
	go func() {
		for {
			select {
			case <-seen:
				return
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
				_, _ = q.AddJob(ctx, q.CreateJob(nil).SetName("probe").SetDateEnable(time.Now().Add(time.Hour)))
			}
		}
	}()
	wait("added")
	close(seen)

	added, err := q.AddJob(ctx, q.CreateJob(nil).SetRetryMax(1).SetRetryDelay(0))
	require.NoError(t, err)
	require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
		return nil, fmt.Errorf("disk full on attempt %d", j.RetryCount+1)
	}))
	wait("failed", added[0].ID, "disk full on attempt 1")
	wait("terminated", added[0].ID, "disk full on attempt 2")
}
