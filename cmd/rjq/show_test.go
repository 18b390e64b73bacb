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

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestParseQueueID(t *testing.T) {
	for _, tc := range []struct {
		id, host string
		pid      int
		ok       bool
	}{
		{"web-1:rjqJobQueue:mail:4242:5127d082-fe7e-4e88-b1de-7093029695c3", "web-1", 4242, true},
		{"::1:db:q:7:u", "::1", 7, true},
		{"web-1:db:q:notapid:u", "", 0, false},
		{"", "", 0, false},
	} {
		host, pid, ok := parseQueueID(tc.id)
		assert.Equal(t, tc.host, host, tc.id)
		assert.Equal(t, tc.pid, pid, tc.id)
		assert.Equal(t, tc.ok, ok, tc.id)
	}
}

// A log as the libraries write it (an active entry holds the processCount before the
// claim's increment, the entries after it the count after): added, two runs (a failure, then a completion) with a
// progress entry in the second, and the outcome of a run whose start was truncated away.
func TestGroupRuns(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const qa, qb = "host-a:db:q:11:u1", "host-b:db:q:22:u2"
	j := &job.Job{Status: job.Completed, Log: []job.LogEntry{
		{Date: at(0), QueueID: qa, Message: job.MessageAdded, Status: job.Waiting},
		{Date: at(1), QueueID: qa, Message: job.MessageActive, Status: job.Active, ProcessCount: 0},
		{Date: at(3), QueueID: qa, Message: job.MessageFailed, Status: job.Failed, Type: job.Error, ProcessCount: 1,
			Duration: 2 * time.Second, ErrorMessage: "boom", ErrorStack: "main.handler\n\tmain.go:1"},
		{Date: at(10), QueueID: qb, Message: job.MessageActive, Status: job.Active, ProcessCount: 1},
		{Date: at(11), QueueID: qb, Message: job.MessageProgress, Status: job.Active, ProcessCount: 2},
		{Date: at(14), QueueID: qb, Message: job.MessageCompleted, Status: job.Completed, ProcessCount: 2},
	}}
	before, runs := groupRuns(j)
	require.Len(t, before, 1)
	require.Len(t, runs, 2)
	first, second := runs[0], runs[1]
	assert.Equal(t, 1, first.Attempt)
	assert.Equal(t, "host-a", first.Host)
	assert.Equal(t, 11, first.PID)
	assert.Equal(t, "failed", first.Outcome)
	assert.Equal(t, "boom", first.ErrorMessage)
	assert.Equal(t, "main.handler\n\tmain.go:1", first.ErrorStack)
	assert.InDelta(t, 2000, first.DurationMs, 0.1, "the duration the log records")
	assert.Equal(t, at(1), *first.Started)
	assert.Len(t, first.entries, 2)

	assert.Equal(t, 2, second.Attempt)
	assert.Equal(t, qb, second.QueueID)
	assert.Equal(t, "completed", second.Outcome)
	assert.InDelta(t, 4000, second.DurationMs, 0.1, "from start to end when the log records none")
	assert.Len(t, second.entries, 3, "the progress entry belongs to the run")

	// Truncated: the start of the first run is gone; its end makes a run of its own. A run
	// that is still going on is running.
	j = &job.Job{Status: job.Active, Log: []job.LogEntry{
		{Date: at(3), QueueID: qa, Message: job.MessageFailed, Status: job.Failed, ProcessCount: 1, Duration: time.Second, ErrorMessage: "boom"},
		{Date: at(10), QueueID: qb, Message: job.MessageActive, Status: job.Active, ProcessCount: 1},
	}}
	before, runs = groupRuns(j)
	assert.Empty(t, before)
	require.Len(t, runs, 2)
	assert.Nil(t, runs[0].Started)
	assert.Equal(t, "failed", runs[0].Outcome)
	assert.Equal(t, "host-a", runs[0].Host)
	assert.Equal(t, "running", runs[1].Outcome)
	assert.Equal(t, 2, runs[1].Attempt, "an active entry holds the count before its claim")
	assert.Nil(t, runs[1].Ended)
}

// rjq show against a queue that ran a job twice: a failure, then a panic that
// terminated it. The text groups the log by run, with each run's worker, error and
// stack; --json carries the runs beside the job's own fields.
func TestShowRuns(t *testing.T) {
	q, db, addr, ctx := newQueue(t, &queue.Options{DatabaseInitDelay: -1, MasterInterval: -1})
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
		Runs   []jobRun
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
		assert.NotEmpty(t, u.ErrorStack)
	}
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
