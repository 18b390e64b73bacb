package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// workers, schedules and limits show what a processing queue registered, set and
// scheduled, as text and as JSON.
func TestWorkersSchedulesAndLimits(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1, Concurrency: 3}))
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}

	for _, cmd := range []string{"workers", "schedules", "limits"} {
		res := rjq(t, bin, append(base, cmd)...)
		require.Equal(t, 0, res.code, "%s: %s", cmd, res.stderr)
		assert.Contains(t, res.stdout, "no ", "%s on a queue with none", cmd)
	}

	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	require.NoError(t, q.Schedule(ctx, "nightly", "0 3 * * *", nil, nil))
	require.NoError(t, q.SetLimit(ctx, "mail", queue.Limit{Starts: 10, Per: time.Minute}))
	var workers []queue.Worker
	require.Eventually(t, func() bool {
		res := rjq(t, bin, append(base, "--json", "workers")...)
		return res.code == 0 && json.Unmarshal([]byte(res.stdout), &workers) == nil && len(workers) == 1
	}, 30*time.Second, 200*time.Millisecond, "the processing queue registers")
	assert.Equal(t, q.ID(), workers[0].QueueID)
	assert.Equal(t, 3, workers[0].Concurrency)

	res := rjq(t, bin, append(base, "schedules", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var schedules []queue.Schedule
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &schedules))
	require.Len(t, schedules, 1)
	assert.Equal(t, "nightly", schedules[0].Name)
	assert.Equal(t, "0 3 * * *", schedules[0].Spec)
	assert.True(t, schedules[0].Next.After(time.Now()), "the next run is to come: %v", schedules[0].Next)

	res = rjq(t, bin, append(base, "limits")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "mail")
	assert.Contains(t, res.stdout, "10 per 1m0s")

	// Running caps and group limits too, in the text and in the JSON rows.
	require.NoError(t, q.SetLimit(ctx, "render", queue.Limit{Running: 4}))
	require.NoError(t, q.SetGroupLimit(ctx, "", 2))
	require.NoError(t, q.SetGroupLimit(ctx, "acme", 5))
	require.NoError(t, q.SetGroupRate(ctx, "acme", 10, time.Minute))
	// And each group's waiting and active jobs (these wait an hour, the queue processes):
	// a group with no limit of its own shows the default.
	later := func(group string) *job.Job {
		return q.CreateJob(nil).SetGroup(group).SetDateEnable(time.Now().Add(time.Hour))
	}
	_, err := q.AddJob(ctx, later("acme"), later("acme"), later("zeta"))
	require.NoError(t, err)
	res = rjq(t, bin, append(base, "limits")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `render\s+-\s+-\s+at most 4`, res.stdout)
	assert.Regexp(t, `GROUP\s+LIMIT\s+RATE\s+WAITING\s+ACTIVE`, res.stdout, "the column as queue.GroupStat names it")
	assert.Regexp(t, `\(default\)\s+at most 2 running\s+-\s+-\s+-`, res.stdout)
	assert.Regexp(t, `acme\s+at most 5 running\s+10 starts per 1m0s\s+2\s+0`, res.stdout)
	assert.Regexp(t, `zeta\s+at most 2 running\s+-\s+1\s+0`, res.stdout)
	res = rjq(t, bin, append(base, "limits", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var rows []struct {
		Name, Group                     *string
		Starts, Running, Limit, Waiting int
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	require.Len(t, rows, 5, res.stdout)
	assert.Equal(t, "mail", *rows[0].Name)
	assert.Equal(t, 4, rows[1].Running, "render")
	assert.Equal(t, "", *rows[2].Group, "the default")
	assert.Equal(t, 2, rows[2].Limit, "a group's limit is named as queue.GroupStat names it")
	assert.Zero(t, rows[2].Running)
	assert.Equal(t, "acme", *rows[3].Group)
	assert.Equal(t, 2, rows[3].Waiting)
	assert.Equal(t, 10, rows[3].Starts, "its rate")
	assert.Equal(t, "zeta", *rows[4].Group)
	assert.Equal(t, 2, rows[4].Limit, "the default's")
}

// sequences shows each sequence's unfinished jobs and the job that holds it.
func TestSequencesShowsWhatHoldsEach(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}

	res := rjq(t, bin, append(base, "sequences")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "no sequences")

	later := func(key string) *job.Job {
		return q.CreateJob(nil).SetSequence(key).SetDateEnable(time.Now().Add(time.Hour))
	}
	first := later("ledger-7")
	_, err := q.AddJob(ctx, first, later("ledger-7"), later("doc-1"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res = rjq(t, bin, append(base, "sequences")...)
		return res.code == 0 && strings.Contains(res.stdout, "ledger-7")
	}, 30*time.Second, 200*time.Millisecond, "the index of sequences is built: %s", res.stderr)
	assert.Regexp(t, `SEQUENCE\s+WAITING\s+ACTIVE\s+FAILED\s+HELD BY`, res.stdout)
	assert.Regexp(t, `doc-1\s+1\s+0\s+0\s+\S+ \(waiting\)`, res.stdout)
	assert.Regexp(t, `ledger-7\s+2\s+0\s+0\s+`+first.ID+` \(waiting\)`, res.stdout)

	res = rjq(t, bin, append(base, "sequences", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var rows []struct {
		Sequence, Head, HeadStatus string
		Waiting                    int
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	require.Len(t, rows, 2, res.stdout)
	assert.Equal(t, "ledger-7", rows[1].Sequence)
	assert.Equal(t, first.ID, rows[1].Head)
	assert.Equal(t, "waiting", rows[1].HeadStatus)
	assert.Equal(t, 2, rows[1].Waiting)
}

// add adds the job it is given, and refuses bad input without writing anything.
func TestAddAddsAJobByHand(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}

	res := rjq(t, bin, append(base, "add", "--data", `{"to":"ann@example.com"}`, "--name", "mail", "--priority", "high",
		"--delay", "1h", "--retry-max", "5", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var added struct{ ID, Status string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &added))
	got, err := q.GetJob(ctx, added.ID)
	require.NoError(t, err)
	require.Len(t, got, 1)
	j := got[0]
	assert.Equal(t, job.Waiting, j.Status)
	assert.Equal(t, "mail", j.Name)
	assert.Equal(t, job.High, j.Priority)
	assert.Equal(t, 5, j.RetryMax)
	assert.Equal(t, map[string]any{"to": "ann@example.com"}, j.Data)
	assert.WithinDuration(t, time.Now().Add(time.Hour), j.DateEnable, time.Minute)

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"add", "--data", "{not json"}, "not JSON"},
		{[]string{"add", "--priority", "urgent"}, "--priority"},
		{[]string{"add", "--timeout", "-1s"}, "add"},
		{[]string{"add", "extra"}, "flags only"},
		{[]string{"add", "--debounce", "1s"}, "debounce"},
		{[]string{"add", "--unique", "k", "--unique-for", "-1h"}, "unique window"},
		{[]string{"add", "--deadline", "-1m"}, "deadline"},
		{[]string{"add", "--depends-on", "not-an-id"}, "not a job id"},
	} {
		res := rjq(t, bin, append(base, tc.args...)...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", tc.args, res.stderr)
		assert.Contains(t, res.stderr, tc.says, "%v", tc.args)
	}
	s, err := q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, s.Total, "bad input added nothing")

	// A unique key with a window and a deadline; the same key again is a duplicate.
	res = rjq(t, bin, append(base, "add", "--unique", "nightly", "--unique-for", "24h", "--deadline", "1h", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var first struct {
		ID        string
		Duplicate bool
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &first))
	assert.False(t, first.Duplicate)
	got, err = q.GetJob(ctx, first.ID)
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, got[0].UniqueFor())
	assert.WithinDuration(t, time.Now().Add(time.Hour), got[0].Deadline(), time.Minute)
	res = rjq(t, bin, append(base, "add", "--unique", "nightly")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, first.ID+" waiting (already there for the unique key: nothing added)")

	// A group, a sequence and parents: a job of a workflow is added blocked.
	res = rjq(t, bin, append(base, "add", "--group", "tenant-q", "--sequence", "acct-7", "--depends-on", first.ID+", "+added.ID, "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var child struct{ ID, Status string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &child))
	assert.Equal(t, "blocked", child.Status)
	got, err = q.GetJob(ctx, child.ID)
	require.NoError(t, err)
	assert.Equal(t, "tenant-q", got[0].Group())
	assert.Equal(t, "acct-7", got[0].Sequence())
	assert.Equal(t, []string{first.ID, added.ID}, got[0].DependsOn())
}
