package rdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// GroupCounts counts the waiting (and failed) and active jobs of each group, not the
// finished or blocked ones nor jobs of no group, and says when it read fewer than there
// are; a group that is no string (written by hand) is left out.
func TestGroupCountsCountsTheLiveJobsOfEachGroup(t *testing.T) {
	tbl, s, db := workerTable(t)
	ctx := context.Background()
	var docs []any
	add := func(group any, status job.Status, n int) {
		for range n {
			j := job.New(nil, job.DefaultOptions())
			j.Status = status
			doc := j.Document()
			if group != nil {
				doc["rjqGroup"] = group
			}
			docs = append(docs, doc)
		}
	}
	add("acme", job.Waiting, 3)
	add("acme", job.Failed, 1)
	add("acme", job.Active, 2)
	add("acme", job.Completed, 5)
	add("acme", job.Blocked, 1)
	add("zeta", job.Active, 1)
	add(nil, job.Waiting, 4)
	add(42, job.Waiting, 1)
	_, err := r.DB(db).Table("jobs").Insert(docs).RunWrite(s)
	require.NoError(t, err)

	counts, partial, err := tbl.GroupCounts(ctx, 100)
	require.NoError(t, err)
	assert.False(t, partial)
	assert.Equal(t, map[string]rdb.GroupCount{"acme": {Waiting: 4, Active: 2}, "zeta": {Active: 1}}, counts)

	// 12 live jobs: reading 5 of them is partial.
	counts, partial, err = tbl.GroupCounts(ctx, 5)
	require.NoError(t, err)
	assert.True(t, partial)
	total := 0
	for _, c := range counts {
		total += c.Waiting + c.Active
	}
	assert.LessOrEqual(t, total, 5)
}
