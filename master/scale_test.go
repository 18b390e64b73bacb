package master_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// insertFinished stores n finished jobs of the given status, finished at the given time.
func (f fixture) insertFinished(t *testing.T, n int, status job.Status, at time.Time) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		j := job.New(nil, job.DefaultOptions())
		j.Status, j.QueueID, j.DateFinished = status, "worker:q", at
		docs[i] = j.Document()
	}
	_, err := f.table.Insert(docs).RunWrite(f.session)
	require.NoError(t, err)
}

// count counts the jobs, the State Document left out.
func (f fixture) count(t *testing.T) int {
	t.Helper()
	var n int
	cur, err := f.table.Filter(func(d r.Term) r.Term { return d.Field("id").Ne(job.StateDocumentID) }).Count().Run(f.session)
	require.NoError(t, err)
	require.NoError(t, cur.One(&n))
	return n
}

// Two masters reviewing at once remove each old finished job once between them, in
// slices, while the recent ones stay.
func TestRetentionRemovesOldJobsOnceAcrossMasters(t *testing.T) {
	f := newFixture(t)
	old := time.Now().Add(-48 * time.Hour)
	f.insertFinished(t, 1500, job.Completed, old)
	f.insertFinished(t, 600, job.Terminated, old)
	f.insertFinished(t, 40, job.Completed, time.Now())
	ret := master.Retention{Period: 24 * time.Hour}
	a, b := f.target(ret), f.target(ret)
	b.QueueID = "master:other"

	var wg sync.WaitGroup
	results := make([]master.Result, 2)
	for i, tg := range []master.Target{a, b} {
		wg.Go(func() {
			res, err := master.Review(context.Background(), tg)
			assert.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	assert.Equal(t, 2100, results[0].Removed+results[1].Removed, "each old job removed once: %+v", results)
	assert.Equal(t, 40, f.count(t), "the recent ones stay")

	// The next review finds nothing left to remove.
	res, err := master.Review(context.Background(), a)
	require.NoError(t, err)
	assert.Zero(t, res.Removed)
}

// The tally counts finished jobs by status up to its time, and retention takes off what
// it removes of those.
func TestTallyCountsFinishedJobsAndRetentionTakesThemOff(t *testing.T) {
	f := newFixture(t)
	old := time.Now().Add(-72 * time.Hour)
	f.insertFinished(t, 30, job.Completed, old)
	f.insertFinished(t, 5, job.Cancelled, old)
	f.insertFinished(t, 7, job.Terminated, time.Now().Add(-time.Hour))
	f.insert(t, map[string]any{"status": "waiting"})
	tg := f.target(master.Retention{Period: 48 * time.Hour})
	var logged bytes.Buffer
	tg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()

	start := time.Now()
	require.NoError(t, master.AdvanceTally(ctx, tg))
	// A first tally that starts 72 hours back says so, and says when it is done.
	assert.Contains(t, logged.String(), "counting finished jobs for the tally, in slices")
	assert.Contains(t, logged.String(), "tally of finished jobs up to date\" counted=42")
	tbl := &rdb.Table{Session: f.session, DB: f.db, Name: "jobs", QueueID: "master:q"}
	tally, err := tbl.ReadTally(ctx)
	require.NoError(t, err)
	require.True(t, tally.Found)
	// Up to the time the pass started, less its few seconds of margin, however long the
	// pass took on a loaded machine.
	assert.WithinDuration(t, start, tally.AsOf, 10*time.Second, "brought up to date")
	assert.Equal(t, [3]int{30, 5, 7}, [3]int{tally.Completed, tally.Cancelled, tally.Terminated})

	// Jobs that finish after the tally's time are counted by a later pass (which counts
	// up to a few seconds before its start: the insert alone takes longer than the
	// millisecond this leaves).
	f.insertFinished(t, 4, job.Completed, tally.AsOf.Add(time.Millisecond))
	logged.Reset()
	require.NoError(t, master.AdvanceTally(ctx, tg))
	assert.Empty(t, logged.String(), "a pass that is not catching up logs nothing")
	tally, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, 34, tally.Completed, "a later pass counts what finished since, once")

	res, err := master.Review(ctx, tg)
	require.NoError(t, err)
	assert.Equal(t, 35, res.Removed)
	tally, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, [3]int{4, 0, 7}, [3]int{tally.Completed, tally.Cancelled, tally.Terminated}, "what retention removed is taken off")
}

// One Master counts the tally at a time: masters that start together add each job once,
// one that finds the tally moved by another Master just now leaves it to that one, and
// one takes over a tally its Master stopped moving.
func TestOneMasterCountsTheTally(t *testing.T) {
	f := newFixture(t)
	f.insertFinished(t, 20, job.Completed, time.Now().Add(-2*time.Hour))
	a := f.target(master.Retention{Keep: true})
	b, c := a, a
	b.QueueID, c.QueueID = "master:b", "master:c"
	ctx := context.Background()
	tbl := &rdb.Table{Session: f.session, DB: f.db, Name: "jobs", QueueID: "test"}

	var wg sync.WaitGroup
	logs := make([]bytes.Buffer, 3)
	for i, tg := range []master.Target{a, b, c} {
		tg.Log = slog.New(slog.NewTextHandler(&logs[i], nil))
		wg.Go(func() { assert.NoError(t, master.AdvanceTally(ctx, tg)) })
	}
	wg.Wait()
	tally, err := tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, 20, tally.Completed, "masters started together count each job once")
	started := 0
	for i := range logs {
		started += strings.Count(logs[i].String(), "counting finished jobs for the tally, in slices")
	}
	assert.Equal(t, 1, started, "the Master that counts says so, the others nothing")
	assert.Contains(t, []string{a.QueueID, b.QueueID, c.QueueID}, tally.By)
	assert.True(t, tally.Moved >= 0 && tally.Moved < 10*time.Second, "moved just now, by the server's clock: %v", tally.Moved)

	// Another Master leaves a tally moved just now to the one that moved it.
	counting := a
	other := b
	if tally.By == b.QueueID {
		other = a
	}
	for _, tg := range []master.Target{a, b, c} {
		if tg.QueueID == tally.By {
			counting = tg
		}
	}
	f.insertFinished(t, 3, job.Completed, tally.AsOf.Add(time.Millisecond))
	require.NoError(t, master.AdvanceTally(ctx, other))
	again, err := tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, [2]any{20, tally.AsOf}, [2]any{again.Completed, again.AsOf}, "left to the Master counting it")

	// The Master counting it goes on.
	require.NoError(t, master.AdvanceTally(ctx, counting))
	again, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, 23, again.Completed)

	// A tally its Master stopped moving a minute ago is taken over.
	f.insertFinished(t, 2, job.Completed, again.AsOf.Add(time.Millisecond))
	_, err = r.DB(f.db).Table("jobs" + rdb.StatsSuffix).Get("finished").Update(map[string]any{"movedAt": r.Now().Sub(60)}).RunWrite(f.session)
	require.NoError(t, err)
	require.NoError(t, master.AdvanceTally(ctx, other))
	again, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, [2]any{25, other.QueueID}, [2]any{again.Completed, again.By}, "taken over")

	// A tally that says nothing of when it moved (an earlier version's) is not held.
	_, err = r.DB(f.db).Table("jobs" + rdb.StatsSuffix).Get("finished").Replace(func(d r.Term) r.Term { return d.Without("movedAt") }).RunWrite(f.session)
	require.NoError(t, err)
	tally, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), tally.Moved)
	f.insertFinished(t, 1, job.Completed, tally.AsOf.Add(time.Millisecond))
	require.NoError(t, master.AdvanceTally(ctx, counting))
	again, err = tbl.ReadTally(ctx)
	require.NoError(t, err)
	assert.Equal(t, 26, again.Completed)
}
