package dbinit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// Creators racing on a fresh server, as a deploy of many workers against a new database
// does: on a real RethinkDB, dbCreate and tableCreate of one name are not serialized, so
// this fails without the twin resolution (reqlite runs one query at a time and cannot
// show it, but the test still checks the outcome there).
func TestAssertCreatesEverythingOnce(t *testing.T) {
	const creators, rounds = 10, 5
	for round := range rounds {
		db := testserver.DB(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		target := dbinit.Target{DB: db, Table: "jobs", RunOpts: r.RunOpts{ReadMode: "majority"}}
		var wg sync.WaitGroup
		errs := make([]error, creators)
		for i := range errs {
			// A session each, as separate processes have.
			tgt := target
			tgt.Session = testserver.Session(t)
			wg.Go(func() { errs[i] = dbinit.Assert(ctx, tgt) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, creator %d", round, i)
		}
		session := testserver.Session(t)
		target.Session = session
		require.NoError(t, dbinit.Assert(ctx, target))
		cancel()

		assert.Equal(t, 1, countOf(t, session, r.DBList(), db), "round %d: databases", round)
		assert.Equal(t, 1, countOf(t, session, r.DB(db).TableList(), "jobs"), "round %d: tables", round)
		var indexes []string
		cur, err := r.DB(db).Table("jobs").IndexList().Run(session)
		require.NoError(t, err)
		require.NoError(t, cur.All(&indexes))
		assert.ElementsMatch(t, dbinit.Indexes, indexes, "round %d", round)
	}
}

// The indexes must sort and select jobs exactly as the Node.js library's do.
func TestIndexesSelectTheRightJobs(t *testing.T) {
	db := testserver.DB(t)
	session := testserver.Session(t)
	ctx := context.Background()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: session, DB: db, Table: "jobs"}))
	table := r.DB(db).Table("jobs")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	docs := []map[string]any{
		{"id": "w-low", "name": "a", "status": "waiting", "priority": 50, "dateEnable": t0, "dateCreated": t0},
		{"id": "w-high", "name": "a", "status": "waiting", "priority": 20, "dateEnable": t0.Add(time.Hour), "dateCreated": t0},
		{"id": "f-high-early", "name": "b", "status": "failed", "priority": 20, "dateEnable": t0, "dateCreated": t0},
		{"id": "active", "status": "active", "priority": 10, "dateEnable": t0, "dateCreated": t0},
		{"id": "done", "status": "completed", "priority": 10, "dateEnable": t0, "dateCreated": t0, "dateFinished": t0},
		{"id": "cancelled", "status": "cancelled", "priority": 10, "dateEnable": t0, "dateCreated": t0, "dateFinished": t0.Add(time.Minute)},
		{"id": "terminated", "status": "terminated", "priority": 10, "dateEnable": t0, "dateCreated": t0, "dateFinished": t0.Add(time.Hour)},
	}
	_, err := table.Insert(docs).RunWrite(session)
	require.NoError(t, err)

	assert.Equal(t, []string{"f-high-early", "w-high", "w-low"},
		ids(t, session, table.OrderBy(r.OrderByOpts{Index: dbinit.IndexInactivePriorityDateCreated})),
		"waiting and failed jobs by [priority, dateEnable, dateCreated]")
	assert.Equal(t, []string{"active"},
		ids(t, session, table.OrderBy(r.OrderByOpts{Index: dbinit.IndexActiveDateEnable})))
	assert.Equal(t, []string{"done", "cancelled", "terminated"},
		ids(t, session, table.OrderBy(r.OrderByOpts{Index: dbinit.IndexFinishedDateFinished})))
	assert.ElementsMatch(t, []string{"w-low", "w-high"},
		ids(t, session, table.GetAllByIndex(dbinit.IndexName, "a")))
	assert.ElementsMatch(t, []string{"done"},
		ids(t, session, table.GetAllByIndex(dbinit.IndexStatus, "completed")))
}

func ids(t *testing.T, s *r.Session, term r.Term) []string {
	t.Helper()
	var out []string
	cur, err := term.Field("id").Run(s)
	require.NoError(t, err)
	require.NoError(t, cur.All(&out))
	return out
}

func countOf(t *testing.T, s *r.Session, list r.Term, name string) int {
	t.Helper()
	var n int
	cur, err := list.Filter(func(v r.Term) r.Term { return v.Eq(name) }).Count().Run(s)
	require.NoError(t, err)
	require.NoError(t, cur.One(&n))
	return n
}

// On a cluster, a session given several servers sends consecutive queries to different
// ones, and a database created through one may not be visible through another yet. This
// runs only against a cluster named in RJQ_TEST_CLUSTER (host:port of each server, comma
// separated): CI has none.
func TestAssertOnACluster(t *testing.T) {
	addrs := os.Getenv("RJQ_TEST_CLUSTER")
	if addrs == "" {
		t.Skip("RJQ_TEST_CLUSTER is not set: start a RethinkDB cluster and name its servers there (host:port,host:port,...)")
	}
	const creators, rounds = 10, 5
	for round := range rounds {
		db := fmt.Sprintf("t_cluster_%d_%06x", round, rand.Uint32()>>8)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var wg sync.WaitGroup
		errs := make([]error, creators)
		for i := range errs {
			session, err := r.Connect(r.ConnectOpts{Addresses: strings.Split(addrs, ","), Timeout: 5 * time.Second})
			require.NoError(t, err)
			defer session.Close()
			wg.Go(func() { errs[i] = dbinit.Assert(ctx, dbinit.Target{Session: session, DB: db, Table: "jobs"}) })
		}
		wg.Wait()
		cancel()
		for i, err := range errs {
			require.NoError(t, err, "round %d, creator %d", round, i)
		}
		session, err := r.Connect(r.ConnectOpts{Addresses: strings.Split(addrs, ",")})
		require.NoError(t, err)
		assert.Equal(t, 1, countOf(t, session, r.DBList(), db), "round %d: databases", round)
		assert.Equal(t, 1, countOf(t, session, r.DB(db).TableList(), "jobs"), "round %d: tables", round)
		_, _ = r.DBDrop(db).RunWrite(session)
		session.Close()
	}
}

// A side table takes the replica count of the queue's table beside it, so that it
// survives what that table survives. It runs only against a cluster of three or more
// servers named in RJQ_TEST_CLUSTER.
func TestSideTableHasTheReplicasOfItsQueueTable(t *testing.T) {
	addrs := os.Getenv("RJQ_TEST_CLUSTER")
	if addrs == "" {
		t.Skip("RJQ_TEST_CLUSTER is not set: start a RethinkDB cluster of three servers and name them there (host:port,host:port,...)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := r.Connect(r.ConnectOpts{Addresses: strings.Split(addrs, ","), Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer session.Close()
	db := fmt.Sprintf("t_side_%06x", rand.Uint32()>>8)
	defer func() { _, _ = r.DBDrop(db).RunWrite(session) }()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: session, DB: db, Table: "jobs", Replicas: 3}))
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: session, DB: db, Table: "jobs_workers", NoIndexes: true, Beside: "jobs"}))
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: session, DB: db, Table: "jobs_alone", NoIndexes: true}))
	replicas := func(table string) int {
		var n int
		cur, err := r.DB(db).Table(table).Config().Field("shards").Nth(0).Field("replicas").Count().Run(session)
		require.NoError(t, err)
		require.NoError(t, cur.One(&n))
		return n
	}
	assert.Equal(t, 3, replicas("jobs_workers"), "beside a table of three replicas")
	assert.Equal(t, 1, replicas("jobs_alone"), "the server's default")
}
