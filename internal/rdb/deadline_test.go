package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// deadlineTable is a job table of its own and an insert of a job with a deadline.
func deadlineTable(t *testing.T) (*rdb.Table, func(job.Status, time.Time) string) {
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(context.Background(), dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	tbl := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "master:m", LimitJobLogs: 100}
	return tbl, func(status job.Status, deadline time.Time) string {
		j := job.New(nil, job.DefaultOptions())
		j.Status, j.QueueID = status, "worker:a"
		doc := j.Document()
		doc["rjqDeadline"] = deadline
		_, err := r.DB(db).Table("jobs").Insert(doc).RunWrite(s)
		require.NoError(t, err)
		return j.ID
	}
}

// ExpireDue cancels the waiting and failed jobs past their deadline, once; a job that
// started in time runs on.
func TestExpireDueCancelsOnce(t *testing.T) {
	tbl, insert := deadlineTable(t)
	ctx := context.Background()
	// Assert leaves this index to the first add of a job with a deadline; nothing waits
	// for it (ExpireDue does without it until it is built).
	require.NoError(t, tbl.EnsureDeadlineIndex(ctx))
	require.NoError(t, tbl.EnsureDeadlineIndex(ctx), "once there, nothing to do")
	require.NoError(t, r.DB(tbl.DB).Table("jobs").IndexWait(rdb.IndexDeadline).Exec(testserver.Session(t)))
	now := time.Now().UTC().Truncate(time.Millisecond)
	late := insert(job.Waiting, now.Add(-time.Second))
	retry := insert(job.Failed, now.Add(-time.Second))
	insert(job.Waiting, now.Add(time.Hour))
	insert(job.Active, now.Add(-time.Second))

	ids, err := tbl.ExpireDue(ctx, now, 100)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{late, retry}, ids)
	ids, err = tbl.ExpireDue(ctx, now, 100)
	require.NoError(t, err)
	assert.Empty(t, ids, "once")
}

// A table without the deadline index (no job with a deadline was added by a queue that
// could create it) says so, for the Master to stop asking until it is there.
func TestExpireDueDoesWithoutItsIndex(t *testing.T) {
	testserver.SkipOnReqlite(t, "reqlite answers a read of a missing index with a malformed response, not RethinkDB's \"Index ... was not found\" error")
	tbl, insert := deadlineTable(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	insert(job.Waiting, now.Add(-time.Second))
	ctx := context.Background()
	has, err := tbl.HasIndex(ctx, rdb.IndexDeadline)
	require.NoError(t, err)
	assert.False(t, has)
	ids, err := tbl.ExpireDue(ctx, now, 100)
	assert.ErrorIs(t, err, rdb.ErrNoDeadlineIndex)
	assert.Empty(t, ids)
	require.NoError(t, tbl.EnsureDeadlineIndex(ctx))
	has, err = tbl.HasIndex(ctx, rdb.IndexDeadline)
	require.NoError(t, err)
	assert.True(t, has, "there as soon as it is created, built or not")
}
