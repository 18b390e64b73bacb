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
	live, err := a.PutWorker(ctx, started, 3, 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, live, 1)
	assert.Equal(t, a.QueueID, live[0].QueueID)
	assert.Equal(t, 3, live[0].Running)
	assert.Equal(t, 10, live[0].Concurrency)
	assert.WithinDuration(t, started, live[0].Started, time.Millisecond)

	live, err = b.PutWorker(ctx, started, 0, 5, 10*time.Second)
	require.NoError(t, err)
	var got []string
	for _, w := range live {
		got = append(got, w.QueueID)
	}
	assert.Equal(t, []string{a.QueueID, b.QueueID}, got, "by queue id")

	missing := &rdb.Table{Session: s, DB: db, Name: "nothing", QueueID: "x"}
	_, err = missing.PutWorker(ctx, started, 0, 1, time.Second)
	assert.Error(t, err, "no workers table")
}
