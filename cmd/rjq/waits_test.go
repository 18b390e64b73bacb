package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// show says what a job that has yet to start waits for: its delay, its group's or name's
// running limit, the job that holds its sequence, its parents; and why a job of a group
// is enabled before it was created.
func TestShowSaysWhatAJobWaitsFor(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1, Concurrency: 4}))
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}
	running := holdCaps(t, q, ctx)
	hour := time.Now().Add(time.Hour)
	delayed := q.CreateJob(nil).SetDateEnable(hour)
	capped := q.CreateJob(nil).SetGroup("tenant-q")
	rated := q.CreateJob(nil).SetGroup("tenant-r")
	named := q.CreateJob(nil).SetName("render")
	head := q.CreateJob(nil).SetName("post").SetSequence("acct-7").SetDateEnable(hour)
	behind := q.CreateJob(nil).SetSequence("acct-7")
	parentA := q.CreateJob(nil).SetName("fetch").SetDateEnable(hour)
	parentB := q.CreateJob(nil).SetDateEnable(hour)
	child := q.CreateJob(nil).SetDependsOn(parentA.ID, parentB.ID)
	_, err := q.AddJob(ctx, delayed, capped, rated, named, head, behind, parentA, parentB, child)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		j    *job.Job
		says string
	}{
		{"a delay", delayed, `waits for\s+its delay, until ` + regexp.QuoteMeta(showTime(t, q, ctx, delayed.ID))},
		{"a group's cap", capped, `waits for\s+group tenant-q is at its cap 1/1\n`},
		{"a group's rate", rated, `waits for\s+group tenant-r is at its rate limit, 1 per 1h0m0s: the next start in about (1h0m\ds|59m\d+s)\n`},
		{"a name's cap", named, `waits for\s+job name render is at its cap 1/1\n`},
		{"a sequence", behind, `waits for\s+sequence acct-7 is held by job ` + head.ID + ` \(post, waiting\)\n`},
		{"parents", child, `waits for\s+parents ` + parentA.ID + ` \(fetch, waiting\), ` + parentB.ID + ` \(waiting\)\n`},
	} {
		require.Eventually(t, func() bool {
			res := rjq(t, bin, append(base, "show", tc.j.ID)...)
			return res.code == 0 && regexp.MustCompile(tc.says).MatchString(res.stdout)
		}, 30*time.Second, 200*time.Millisecond, "%s: show says %s", tc.name, tc.says)
	}
	res := rjq(t, bin, append(base, "show", running[0].ID)...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stdout, "waits for", "a running job waits for nothing")

	res = rjq(t, bin, append(base, "--json", "show", capped.ID, child.ID, running[0].ID)...)
	require.Equal(t, 0, res.code, res.stderr)
	var shown []struct {
		ID       string
		WaitsFor *[]struct{ Kind, Text, Key string }
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
	require.Len(t, shown, 3)
	kinds := map[string][]string{}
	for _, s := range shown {
		if s.WaitsFor == nil {
			kinds[s.ID] = nil
			continue
		}
		kinds[s.ID] = []string{}
		for _, w := range *s.WaitsFor {
			kinds[s.ID] = append(kinds[s.ID], w.Kind+" "+w.Key)
		}
	}
	assert.Equal(t, map[string][]string{capped.ID: {"group tenant-q"}, child.ID: {"parents "}, running[0].ID: nil}, kinds,
		"the kind and key of each wait; no waitsFor for a running job")
}

// showTime is the enabled time of job id as show prints it.
func showTime(t *testing.T, q *queue.Queue, ctx context.Context, id string) string {
	t.Helper()
	got, err := q.GetJob(ctx, id)
	require.NoError(t, err)
	return listing.Time(got[0].DateEnable)
}

// A job of a group placed at its group's turn, before it was created, says so beside its
// enabled time.
func TestShowSaysWhyAGroupsJobIsEnabledBeforeItWasCreated(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	// A job due an hour ago heads the waiting jobs: the group's turns start there.
	_, err := q.AddJob(ctx, q.CreateJob(nil).SetDateEnable(time.Now().Add(-time.Hour)))
	require.NoError(t, err)
	grouped, err := q.AddJob(ctx, q.CreateJob(nil).SetGroup("tenant-q"))
	require.NoError(t, err)
	require.True(t, grouped[0].DateEnable.Before(grouped[0].DateCreated), "the group's turn comes before its creation")
	plain, err := q.AddJob(ctx, q.CreateJob(nil))
	require.NoError(t, err)
	bin := binary(t)
	res := rjq(t, bin, "--addr", addr, "--db", db, "show", grouped[0].ID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `enabled\s+\S+ \(its group's turn in the order workers take jobs\)\n`, res.stdout)
	res = rjq(t, bin, "--addr", addr, "--db", db, "show", plain[0].ID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stdout, "its group's turn")
	assert.Regexp(t, `waits for\s+a free worker`, res.stdout, "a due job waits for a worker")
}

// holdCaps sets a running limit of 1 on group tenant-q and job name render and a rate of
// 1 an hour on group tenant-r, and starts a job of each that runs until the test ends:
// they hold the caps, and the rate's one start.
func holdCaps(t *testing.T, q *queue.Queue, ctx context.Context) []*job.Job {
	t.Helper()
	require.NoError(t, q.SetGroupLimit(ctx, "tenant-q", 1))
	require.NoError(t, q.SetLimit(ctx, "render", queue.Limit{Running: 1}))
	require.NoError(t, q.SetGroupRate(ctx, "tenant-r", 1, time.Hour))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	active := q.Events(ctx, queue.EventActive)
	require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	// One job of the group and one of the name run, and hold their caps.
	running, err := q.AddJob(ctx, q.CreateJob(nil).SetGroup("tenant-q"), q.CreateJob(nil).SetName("render"), q.CreateJob(nil).SetGroup("tenant-r"))
	require.NoError(t, err)
	for range running {
		select {
		case <-active:
		case <-ctx.Done():
			t.Fatal("the jobs that hold the caps did not start")
		}
	}
	return running
}
