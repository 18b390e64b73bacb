package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestShowRuns(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	ended := q.Events(ctx, queue.EventTerminated)
	added, err := q.AddJob(ctx, q.CreateJob("x").SetRetryMax(1).SetRetryDelay(0))
	require.NoError(t, err)
	require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
		if j.RetryCount == 0 {
			return nil, errors.New("the first attempt fails")
		}
		panic("the second attempt panics")
	}))
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the job did not end")
	}
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}
	host, _ := os.Hostname()

	res := rjq(t, bin, append(base, "show", added[0].ID)...)
	require.Equal(t, 0, res.code, res.stderr)
	out := res.stdout
	first, second := strings.Index(out, "attempt 1: failed by "+q.ID()), strings.Index(out, "attempt 2: terminated by "+q.ID())
	require.GreaterOrEqual(t, first, 0, out)
	require.Greater(t, second, first, out)
	assert.Contains(t, out, "(host "+host+", pid "+strconv.Itoa(os.Getpid())+")")
	assert.Contains(t, out[first:second], "error: the first attempt fails")
	assert.Contains(t, out[second:], "error: ")
	assert.Contains(t, out[second:], "the second attempt panics")
	assert.Contains(t, out[second:], "stack:")
	assert.Contains(t, out[second:], "goroutine", "the panic's stack")

	res = rjq(t, bin, append(base, "--json", "show", added[0].ID)...)
	require.Equal(t, 0, res.code, res.stderr)
	var shown []struct {
		Status string
		Log    []struct{ ErrorMessage, ErrorStack string }
		Runs   []listing.Run
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
	require.Len(t, shown, 1)
	assert.Equal(t, "terminated", shown[0].Status)
	require.Len(t, shown[0].Runs, 2)
	for i, u := range shown[0].Runs {
		assert.Equal(t, i+1, u.Attempt)
		assert.Equal(t, q.ID(), u.QueueID)
		assert.Equal(t, host, u.Host)
		assert.Equal(t, os.Getpid(), u.PID)
		assert.NotNil(t, u.Started)
		assert.NotEmpty(t, u.ErrorMessage)
	}
	assert.Empty(t, shown[0].Runs[0].ErrorStack, "an error without a stack shows none, not the log's placeholder")
	assert.Equal(t, "failed", shown[0].Runs[0].Outcome)
	assert.Equal(t, "the first attempt fails", shown[0].Runs[0].ErrorMessage)
	assert.Equal(t, "terminated", shown[0].Runs[1].Outcome)
	assert.Contains(t, shown[0].Runs[1].ErrorStack, "goroutine")
	var withStack int
	for _, e := range shown[0].Log {
		if strings.Contains(e.ErrorStack, "goroutine") {
			withStack++
		}
	}
	assert.Equal(t, 1, withStack, "the log entries keep their error stack")
}

// show prints a unique key with its window and debounce, a start deadline, a group and a
// sequence.
func TestShowFlowFields(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	added, err := q.AddJob(ctx, q.CreateJob("x").SetUniqueKey("welcome:ann").SetUniqueFor(24*time.Hour).
		SetDebounce(2*time.Second).SetDeadline(deadline).SetGroup("customer-7").SetSequence("doc-42"))
	require.NoError(t, err)
	res := rjq(t, binary(t), "--addr", addr, "--db", db, "show", added[0].ID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `unique key\s+welcome:ann \(kept 24h0m0s after it finished; debounce 2s\)`, res.stdout)
	assert.Regexp(t, `deadline\s+`+listing.Time(deadline), res.stdout)
	assert.Regexp(t, `group\s+customer-7\n`, res.stdout)
	assert.Regexp(t, `sequence\s+doc-42\n`, res.stdout)

	// A workflow: the child lists its parent, the parent its child, each with its status.
	parent := q.CreateJob("p").SetDateEnable(time.Now().Add(time.Hour))
	child := q.CreateJob("c").SetDependsOn(parent.ID)
	_, err = q.AddJob(ctx, parent, child)
	require.NoError(t, err)
	res = rjq(t, binary(t), "--addr", addr, "--db", db, "show", child.ID, parent.ID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `parents\s+`+parent.ID+`\s+waiting\n`, res.stdout)
	assert.Regexp(t, `children\s+`+child.ID+`\s+blocked\n`, res.stdout)
	res = rjq(t, binary(t), "--addr", addr, "--db", db, "summary")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "blocked (jobs of workflows waiting for their parents): 1\n")
}
