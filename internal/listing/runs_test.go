package listing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
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
		host, pid, ok := ParseQueueID(tc.id)
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
	before, runs := Runs(j)
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
	assert.Len(t, first.Entries, 2)

	assert.Equal(t, 2, second.Attempt)
	assert.Equal(t, qb, second.QueueID)
	assert.Equal(t, "completed", second.Outcome)
	assert.InDelta(t, 4000, second.DurationMs, 0.1, "from start to end when the log records none")
	assert.Len(t, second.Entries, 3, "the progress entry belongs to the run")

	// Truncated: the start of the first run is gone; its end makes a run of its own. A run
	// that is still going on is running.
	j = &job.Job{Status: job.Active, Log: []job.LogEntry{
		{Date: at(3), QueueID: qa, Message: job.MessageFailed, Status: job.Failed, ProcessCount: 1, Duration: time.Second, ErrorMessage: "boom"},
		{Date: at(10), QueueID: qb, Message: job.MessageActive, Status: job.Active, ProcessCount: 1},
	}}
	before, runs = Runs(j)
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

// A run its worker handed back as it stopped says so.
func TestRunsNameAHandBack(t *testing.T) {
	j := job.New(nil, job.Options{})
	at := time.Now()
	j.Log = []job.LogEntry{
		{Date: at, Message: job.MessageAdded, Status: job.Waiting},
		{Date: at, Message: job.MessageActive, Status: job.Active, QueueID: "h:db:q:1:x"},
		{Date: at.Add(time.Second), Message: job.MessageWorkerStopped, Status: job.Waiting, Type: job.Warning, ProcessCount: 1},
	}
	_, runs := Runs(j)
	require.Len(t, runs, 1)
	assert.Equal(t, "handed back", runs[0].Outcome)
	assert.Equal(t, HandBackReason, runs[0].Reason)
}
