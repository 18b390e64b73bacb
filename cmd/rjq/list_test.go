package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
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
