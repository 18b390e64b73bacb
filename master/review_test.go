package master_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

func TestMain(m *testing.M) { testserver.Main(m) }

type fixture struct {
	session *r.Session
	db      string
	table   r.Term
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db := testserver.DB(t)
	s := testserver.Session(t)
	require.NoError(t, dbinit.Assert(context.Background(), dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	return fixture{session: s, db: db, table: r.DB(db).Table("jobs")}
}

func (f fixture) target(retention master.Retention) master.Target {
	return master.Target{Session: f.session, DB: f.db, Table: "jobs", QueueID: "master:q", LimitJobLogs: 100, Retention: retention}
}

// insert stores a job document with the given fields over sensible defaults.
func (f fixture) insert(t *testing.T, fields map[string]any) string {
	t.Helper()
	j := job.New(nil, job.DefaultOptions())
	j.Status = job.Waiting
	j.QueueID = "worker:q"
	doc := j.Document()
	for k, v := range fields {
		doc[k] = v
	}
	_, err := f.table.Insert(doc).RunWrite(f.session)
	require.NoError(t, err)
	return j.ID
}

func (f fixture) get(t *testing.T, id string) map[string]any {
	t.Helper()
	cur, err := f.table.Get(id).Run(f.session)
	require.NoError(t, err)
	var doc map[string]any
	if err := cur.One(&doc); err == r.ErrEmptyResult {
		return nil
	} else {
		require.NoError(t, err)
	}
	return doc
}

func TestReviewFailsOrphanedJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	retry := f.insert(t, map[string]any{"status": "active", "dateEnable": past, "retryCount": 1, "retryMax": 3, "processCount": 2})
	last := f.insert(t, map[string]any{"status": "active", "dateEnable": past, "retryCount": 3, "retryMax": 3, "processCount": 4})
	running := f.insert(t, map[string]any{"status": "active", "dateEnable": time.Now().Add(time.Hour)})
	waiting := f.insert(t, map[string]any{"status": "waiting", "dateEnable": past})

	res, err := master.Review(context.Background(), f.target(master.Retention{Keep: true}))
	require.NoError(t, err)
	assert.Equal(t, master.Result{Reviewed: 2}, res)

	doc := f.get(t, retry)
	assert.Equal(t, "failed", doc["status"])
	assert.Equal(t, float64(2), doc["retryCount"])
	assert.Equal(t, "master:q", doc["queueId"])
	assert.WithinDuration(t, time.Now(), doc["dateFinished"].(time.Time), 5*time.Second)
	log := doc["log"].([]any)
	entry := log[len(log)-1].(map[string]any)
	assert.Equal(t, master.MessageOrphan, entry["message"])
	assert.Equal(t, "warning", entry["type"])
	assert.Equal(t, "failed", entry["status"])
	assert.Equal(t, float64(1), entry["retryCount"], "the entry has the count before the review, as in the original")
	assert.True(t, past.Equal(entry["dateEnable"].(time.Time)), "the entry keeps the dateEnable that expired")

	doc = f.get(t, last)
	assert.Equal(t, "terminated", doc["status"])
	assert.Equal(t, float64(3), doc["retryCount"])
	log = doc["log"].([]any)
	assert.Equal(t, "error", log[len(log)-1].(map[string]any)["type"])

	assert.Equal(t, "active", f.get(t, running)["status"], "a job within its time is left alone")
	assert.Equal(t, "waiting", f.get(t, waiting)["status"])

	state := f.get(t, job.StateDocumentID)
	assert.Equal(t, "reviewed", state["state"])
	assert.Equal(t, "master:q", state["queueId"])
}

func TestReviewRemovesFinishedJobsByRetention(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, tc := range []struct {
		name      string
		retention master.Retention
		removed   []string
	}{
		{"keep", master.Retention{Keep: true}, nil},
		{"immediately", master.Retention{Immediately: true}, []string{"completed-old", "cancelled-new", "terminated-new"}},
		{"two days", master.Retention{Period: 2 * day}, []string{"completed-old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ids := map[string]string{
				"completed-old":  f.insert(t, map[string]any{"status": "completed", "dateFinished": time.Now().Add(-10 * day)}),
				"cancelled-new":  f.insert(t, map[string]any{"status": "cancelled", "dateFinished": time.Now().Add(-day)}),
				"terminated-new": f.insert(t, map[string]any{"status": "terminated", "dateFinished": time.Now().Add(-time.Hour)}),
				"waiting-old":    f.insert(t, map[string]any{"status": "waiting", "dateFinished": time.Now().Add(-10 * day)}),
				"failed-old":     f.insert(t, map[string]any{"status": "failed", "dateFinished": time.Now().Add(-10 * day), "dateEnable": time.Now().Add(time.Hour)}),
			}
			res, err := master.Review(context.Background(), f.target(tc.retention))
			require.NoError(t, err)
			assert.Equal(t, len(tc.removed), res.Removed)
			for name, id := range ids {
				gone := f.get(t, id) == nil
				want := false
				for _, r := range tc.removed {
					want = want || r == name
				}
				assert.Equal(t, want, gone, "%s removed", name)
			}
		})
	}
}

// Several masters on one table: each orphan is reviewed once.
func TestConcurrentReviewsAreSafe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	past := time.Now().Add(-time.Minute)
	const orphans = 10
	for range orphans {
		f.insert(t, map[string]any{"status": "active", "dateEnable": past, "retryMax": 3})
	}
	var wg sync.WaitGroup
	results := make([]master.Result, 3)
	for i := range results {
		wg.Go(func() {
			res, err := master.Review(context.Background(), f.target(master.Retention{Keep: true}))
			assert.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	total := 0
	for _, res := range results {
		total += res.Reviewed
	}
	assert.Equal(t, orphans, total, "every orphan failed exactly once")
	var docs []map[string]any
	cur, err := f.table.Run(f.session)
	require.NoError(t, err)
	require.NoError(t, cur.All(&docs))
	failed := 0
	for _, doc := range docs {
		if doc["status"] == "failed" {
			failed++
			assert.Equal(t, float64(1), doc["retryCount"], "retried once, not once per master")
		}
	}
	assert.Equal(t, orphans, failed)
}
