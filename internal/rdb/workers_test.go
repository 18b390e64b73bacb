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
)

// A beat's one query writes the worker's entry and returns the live ones, its own among
// them, without the entries their workers stopped renewing; a write that fails (no workers
// table) is an error, not an empty list.
func TestPutWorkerWritesItsEntryAndReadsTheLiveOnes(t *testing.T) {
	ctx := context.Background()
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "jobs_workers", NoIndexes: true}))
	stale := map[string]any{"id": "host:db:jobs:1:gone", "lastSeen": time.Now().Add(-time.Hour), "heartbeat": 1000}
	_, err := r.DB(db).Table("jobs_workers").Insert(stale).RunWrite(s)
	require.NoError(t, err)

	a := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "host:db:jobs:2:a"}
	b := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "host:db:jobs:3:b"}
	started := time.Now().Add(-time.Minute)
	beat, err := a.PutWorker(ctx, rdb.WorkerBeat{Started: started, Running: 3, Concurrency: 10, Heartbeat: 10 * time.Second})
	require.NoError(t, err)
	assert.Nil(t, beat.Limits, "not asked for")
	live := beat.Workers
	require.Len(t, live, 1)
	assert.Equal(t, a.QueueID, live[0].QueueID)
	assert.Equal(t, 3, live[0].Running)
	assert.Equal(t, 10, live[0].Concurrency)
	assert.WithinDuration(t, started, live[0].Started, time.Millisecond)

	beat, err = b.PutWorker(ctx, rdb.WorkerBeat{Started: started, Concurrency: 5, Heartbeat: 10 * time.Second})
	require.NoError(t, err)
	var got []string
	for _, w := range beat.Workers {
		got = append(got, w.QueueID)
	}
	assert.Equal(t, []string{a.QueueID, b.QueueID}, got, "by queue id")

	missing := &rdb.Table{Session: s, DB: db, Name: "nothing", QueueID: "x"}
	_, err = missing.PutWorker(ctx, rdb.WorkerBeat{Started: started, Concurrency: 1, Heartbeat: time.Second})
	assert.Error(t, err, "no workers table")
}

// A beat that asks for the limits gets them from the same query, as Limits reads them:
// none while the queue has no limits table, and then by name and by group, a document
// that is not a limit left out and reported.
func TestABeatReadsTheLimitsToo(t *testing.T) {
	ctx := context.Background()
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "jobs_workers", NoIndexes: true}))
	tbl := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "host:db:jobs:1:a"}
	w := rdb.WorkerBeat{Started: time.Now(), Concurrency: 2, Heartbeat: 10 * time.Second, Limits: true}

	beat, err := tbl.PutWorker(ctx, w)
	require.NoError(t, err, "no limits table is no limits")
	require.NotNil(t, beat.Limits)
	assert.Empty(t, beat.Limits.Names)
	assert.Empty(t, beat.Limits.Groups)
	require.Len(t, beat.Workers, 1)

	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "jobs" + rdb.LimitsSuffix, NoIndexes: true}))
	require.NoError(t, tbl.PutLimit(ctx, rdb.StoredLimit{Name: "mail", Starts: 5, Per: 1000, Running: 2}))
	require.NoError(t, tbl.PutGroupLimit(ctx, "tenant", 3))
	_, err = r.DB(db).Table("jobs" + rdb.LimitsSuffix).Insert(map[string]any{"id": "junk", "starts": "many"}).RunWrite(s)
	require.NoError(t, err)

	beat, err = tbl.PutWorker(ctx, w)
	require.NoError(t, err)
	require.NotNil(t, beat.Limits)
	want, err := tbl.Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, want.Names, beat.Limits.Names)
	assert.Equal(t, want.Groups, beat.Limits.Groups)
	require.Len(t, beat.Limits.Names, 1)
	assert.Equal(t, rdb.StoredLimit{Name: "mail", Starts: 5, Per: 1000, Running: 2}, beat.Limits.Names[0])
	assert.Equal(t, map[string]int{"tenant": 3}, beat.Limits.Groups)
	assert.Len(t, beat.Limits.Bad, 1, "the junk document")
	assert.Len(t, beat.Workers, 1)
}
