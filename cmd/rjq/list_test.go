package main

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// One status pages in its time order, both ways, by the cursors each page prints.
func TestListPagesOneStatusInTimeOrderBothWays(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1, Concurrency: 1}))
	completed := q.Events(ctx, queue.EventCompleted)
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	// One at a time, so that each finishes after the one before: the newest is the last.
	var order []string
	for i := range 5 {
		added, err := q.AddJob(ctx, q.CreateJob(i))
		require.NoError(t, err)
		select {
		case <-completed:
		case <-ctx.Done():
			t.Fatal("a job did not complete")
		}
		order = append([]string{added[0].ID}, order...)
	}
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--queue", q.Name(), "list", "--status", "completed", "--limit", "2"}
	ids := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s`)
	page := func(args ...string) (got []string, more, before []string) {
		res := rjq(t, bin, append(base, args...)...)
		require.Equal(t, 0, res.code, res.stderr)
		for _, m := range ids.FindAllStringSubmatch(res.stdout, -1) {
			got = append(got, m[1])
		}
		for _, line := range strings.Split(res.stdout, "\n") {
			if rest, ok := strings.CutPrefix(line, "more: rjq list --status completed "); ok {
				more = strings.Fields(rest)
			}
			if rest, ok := strings.CutPrefix(line, "before: rjq list --status completed "); ok {
				before = strings.Fields(rest)
			}
		}
		return got, more, before
	}
	first, more, before := page()
	assert.Equal(t, order[:2], first, "the newest two")
	assert.Empty(t, before, "nothing before the first page")
	second, more, before := page(more...)
	assert.Equal(t, order[2:4], second, "the next two")
	back, _, _ := page(before...)
	assert.Equal(t, first, back, "the page before the second is the first")
	third, more, _ := page(more...)
	assert.Equal(t, order[4:], third, "the oldest")
	assert.Empty(t, more, "nothing after the last page")

	// A search: by the text of the log, a page of two at a time.
	found, more, _ := page("--text", "COMPLETED")
	assert.Equal(t, order[:2], found)
	require.Equal(t, []string{"--text", "COMPLETED", "--cursor"}, more[:3], "the next page searches on")
	found, _, _ = page(more...)
	assert.Equal(t, order[2:4], found)
	none, _, _ := page("--text", "no such words")
	assert.Empty(t, none)

	res := rjq(t, bin, "--addr", addr, "--db", db, "--queue", q.Name(), "list", "--cursor", "x")
	assert.Equal(t, exitUsage, res.code, "a cursor without a status")
	res = rjq(t, bin, append(base, "--cursor", "not-a-cursor")...)
	assert.Equal(t, exitUsage, res.code, res.stderr)
}

// list pages blocked jobs, a group's jobs of a status and a sequence's jobs, with a column
// for each job's group and sequence, in text and JSON.
func TestListBlockedJobsGroupsAndSequences(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	hour := time.Now().Add(time.Hour)
	parent := q.CreateJob(nil).SetDateEnable(hour)
	var blocked, grouped, sequenced []*job.Job
	for i := range 3 {
		blocked = append(blocked, q.CreateJob(i).SetDependsOn(parent.ID))
		grouped = append(grouped, q.CreateJob(i).SetGroup("tenant-q").SetDateEnable(hour.Add(time.Duration(i)*time.Second)))
		sequenced = append(sequenced, q.CreateJob(i).SetSequence("acct-7").SetDateEnable(hour))
	}
	all := append(append(append([]*job.Job{parent, q.CreateJob(nil).SetGroup("tenant-r").SetDateEnable(hour)}, blocked...), grouped...), sequenced...)
	_, err := q.AddJob(ctx, all...)
	require.NoError(t, err)
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "list", "--limit", "2"}
	ids := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s`)
	// walk pages through a list by the "more" lines and returns the ids in order.
	walk := func(t *testing.T, args ...string) (got []string, out string) {
		t.Helper()
		for page := 0; ; page++ {
			require.Less(t, page, 20)
			res := rjq(t, bin, append(base, args...)...)
			require.Equal(t, 0, res.code, "%v: %s", args, res.stderr)
			out += res.stdout
			for _, m := range ids.FindAllStringSubmatch(res.stdout, -1) {
				got = append(got, m[1])
			}
			more := regexp.MustCompile(`(?m)^more: rjq list (.*)$`).FindStringSubmatch(res.stdout)
			if more == nil {
				return got, out
			}
			args = strings.Fields(more[1])
		}
	}
	idsOf := func(jobs []*job.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	t.Run("blocked jobs, by id", func(t *testing.T) {
		testserver.SkipOnReqlite(t, "it reads the entries of one key of an index in no set order, where RethinkDB reads them by id")
		byID := idsOf(blocked)
		slices.Sort(byID)
		got, _ := walk(t, "--status", "blocked")
		assert.Equal(t, byID, got)
	})
	got, out := walk(t, "--status", "waiting", "--group", "tenant-q")
	assert.Equal(t, idsOf(grouped), got, "the group's waiting jobs, in the order workers take them")
	assert.Regexp(t, `(?m)^ID\s+NAME\s+STATUS\s+PRIORITY\s+PROGRESS\s+CREATED\s+GROUP\s+SEQUENCE$`, out)
	assert.Regexp(t, grouped[0].ID+`.*\stenant-q\s+-\n`, out)
	require.Eventually(t, func() bool {
		got, out = walk(t, "--sequence", "acct-7")
		return slices.Equal(idsOf(sequenced), got)
	}, 30*time.Second, 200*time.Millisecond, "the sequence's jobs in the order they run: %v", got)
	assert.Regexp(t, sequenced[0].ID+`.*\s-\s+acct-7\n`, out)

	res := rjq(t, bin, "--addr", addr, "--db", db, "--json", "list", "--sequence", "acct-7", "--limit", "1")
	require.Equal(t, 0, res.code, res.stderr)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, "acct-7", rows[0]["sequence"])
	assert.Equal(t, "", rows[0]["group"])

	res = rjq(t, bin, append(base, "--group", "tenant-q")...)
	assert.Equal(t, exitUsage, res.code, "a group needs a status")
	assert.Contains(t, res.stderr, "--group needs --status")
}
