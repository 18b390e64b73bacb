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

// slotsTable is a job table with its slots side table, and an insert of a job in a status.
func slotsTable(t *testing.T) (*rdb.Table, func(job.Status, int, time.Time) string) {
	db, s := testserver.DB(t), testserver.Session(t)
	ctx := context.Background()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	_, err := r.DB(db).TableCreate("jobs" + rdb.SlotsSuffix).RunWrite(s)
	require.NoError(t, err)
	require.NoError(t, r.DB(db).Table("jobs"+rdb.SlotsSuffix).Wait().Exec(s))
	tbl := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "worker:w", LimitJobLogs: 100}
	return tbl, func(status job.Status, pc int, lease time.Time) string {
		j := job.New(nil, job.DefaultOptions())
		j.Status, j.ProcessCount, j.DateEnable = status, pc, lease
		_, err := r.DB(db).Table("jobs").Insert(j.Document()).RunWrite(s)
		require.NoError(t, err)
		return j.ID
	}
}

// Slots are taken up to the limit, in the order asked, atomically per key; a release
// frees only the run it names; a holder whose run is over is found stale and dropped by
// the next take that names it.
func TestSlotsAreTakenUpToTheLimitAndGivenBack(t *testing.T) {
	tbl, insert := slotsTable(t)
	ctx := context.Background()
	now := time.Now()
	a, b, c := insert(job.Waiting, 0, now), insert(job.Waiting, 0, now), insert(job.Waiting, 0, now)
	key := rdb.GroupSlot("acme")
	want := []rdb.Holder{{ID: a, PC: 1}, {ID: b, PC: 1}, {ID: c, PC: 1}}
	slots, err := tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: want}})
	require.NoError(t, err)
	assert.True(t, slots.Holds(key, want[0]))
	assert.True(t, slots.Holds(key, want[1]))
	assert.False(t, slots.Holds(key, want[2]), "the limit is 2")
	assert.Len(t, slots[key], 2)

	again, err := tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: want[:1]}})
	require.NoError(t, err)
	assert.True(t, again.Holds(key, want[0]), "a run holding its slot keeps it")
	assert.Len(t, again[key], 2)

	require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {{ID: a, PC: 2}}}))
	again, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: want[2:]}})
	require.NoError(t, err)
	assert.False(t, again.Holds(key, want[2]), "a release of another run of the job frees nothing")

	// a and b never claimed within the grace: not stale yet (their claims may be on the way).
	stale, err := tbl.Stale(ctx, again, now)
	require.NoError(t, err)
	assert.Empty(t, stale)
	stale, err = tbl.Stale(ctx, again, now.Add(time.Minute))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{a, b}, stale[key], "their claims never landed")

	require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {{ID: a, PC: 1}}}))
	again, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: want[2:]}})
	require.NoError(t, err)
	assert.True(t, again.Holds(key, want[2]), "a's slot was given back")
	assert.False(t, again.Holds(key, want[0]))

	again, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: want[:1], Stale: []string{b}}})
	require.NoError(t, err)
	assert.True(t, again.Holds(key, want[0]), "b's stale slot went to a")
	assert.Len(t, again[key], 2)
}

// A holder is stale once its run is over: the job finished, was claimed again, or its
// lease ended; not while it runs.
func TestStaleHoldersAreThoseWhoseRunIsOver(t *testing.T) {
	tbl, insert := slotsTable(t)
	ctx := context.Background()
	now := time.Now()
	running := insert(job.Active, 1, now.Add(time.Minute))
	leaseOver := insert(job.Active, 1, now.Add(-time.Second))
	done := insert(job.Completed, 1, now)
	again := insert(job.Active, 2, now.Add(time.Minute))
	key := rdb.NameSlot("mail")
	var want []rdb.Holder
	for _, id := range []string{running, leaseOver, done, again, "gone"} {
		want = append(want, rdb.Holder{ID: id, PC: 1})
	}
	slots, err := tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 10, Want: want}})
	require.NoError(t, err)
	stale, err := tbl.Stale(ctx, slots, now)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{leaseOver, done, again, "gone"}, stale[key])
}

// A slots document written by hand, of any shape, neither stops the takes nor holds a
// slot: what is not a holder is dropped by the next write.
func TestAHandWrittenSlotsDocumentDoesNotStopTheTakes(t *testing.T) {
	tbl, insert := slotsTable(t)
	ctx := context.Background()
	s := testserver.Session(t)
	side := r.DB(tbl.DB).Table("jobs" + rdb.SlotsSuffix)
	a := insert(job.Waiting, 0, time.Now())
	key := rdb.GroupSlot("g")
	for _, garbage := range []any{
		"not an object",
		map[string]any{key: "nor this"},
		map[string]any{key: map[string]any{"x": 1, "y": map[string]any{"pc": "one"}}},
	} {
		_, err := side.Insert(map[string]any{"id": "slots", "keys": garbage}, r.InsertOpts{Conflict: "replace"}).RunWrite(s)
		require.NoError(t, err)
		got, err := tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 1, Want: []rdb.Holder{{ID: a, PC: 1}}}})
		require.NoError(t, err, "%v", garbage)
		assert.True(t, got.Holds(key, rdb.Holder{ID: a, PC: 1}), "%v holds no slot", garbage)
		assert.Len(t, got[key], 1)
		require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {{ID: a, PC: 1}}}))
	}
	_, err := side.Insert(map[string]any{"id": "slots", "keys": map[string]any{key: 7}}, r.InsertOpts{Conflict: "replace"}).RunWrite(s)
	require.NoError(t, err)
	require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {{ID: a, PC: 1}}}), "a release too")
}

// Two queues that read the same job both want its slot: the first gets it, the second
// does not (so only the first claims the job), and the second's release frees nothing.
func TestTwoQueuesWantingOneJobsSlot(t *testing.T) {
	tbl, insert := slotsTable(t)
	ctx := context.Background()
	x, y := insert(job.Waiting, 0, time.Now()), insert(job.Waiting, 0, time.Now())
	key := rdb.GroupSlot("g")
	a, b := rdb.Holder{ID: x, PC: 1, Queue: "a"}, rdb.Holder{ID: x, PC: 1, Queue: "b"}
	got, err := tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: []rdb.Holder{a}}})
	require.NoError(t, err)
	require.True(t, got.Holds(key, a))
	got, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: []rdb.Holder{b}}})
	require.NoError(t, err)
	assert.False(t, got.Holds(key, b), "a holds the job's slot")
	require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {b}}))
	other := rdb.Holder{ID: y, PC: 1, Queue: "b"}
	got, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 1, Want: []rdb.Holder{other}}})
	require.NoError(t, err)
	assert.False(t, got.Holds(key, other), "b's release did not free a's slot: the key is still full at 1")
	assert.True(t, got.Holds(key, a))
}

// A rate's starts are held by start, not by run: two starts of one job each hold one, up
// to the limit; they expire after the span by the server's clock; a release gives back
// only the start it names; and a take of a rate and of a running slot in one call takes
// both.
func TestRateStartsExpireAndAreGivenBackByStart(t *testing.T) {
	tbl, insert := slotsTable(t)
	ctx := context.Background()
	now := time.Now()
	a, b := insert(job.Waiting, 0, now), insert(job.Waiting, 0, now)
	key, running := rdb.GroupRateSlot("acme"), rdb.GroupSlot("acme")
	first, second := rdb.RateHolder(a, 1, "q"), rdb.RateHolder(a, 2, "q")
	span := 2 * time.Second
	got, err := tbl.TakeSlots(ctx, []rdb.SlotTake{
		{Key: key, Limit: 2, Want: []rdb.Holder{first, second}, Expire: span},
		{Key: running, Limit: 1, Want: []rdb.Holder{{ID: b, PC: 1, Queue: "q"}}},
	})
	require.NoError(t, err)
	assert.True(t, got.Holds(key, first) && got.Holds(key, second), "two starts of one job hold two")
	assert.True(t, got.Holds(running, rdb.Holder{ID: b, PC: 1, Queue: "q"}))
	third := rdb.RateHolder(b, 1, "q")
	got, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: []rdb.Holder{third}, Expire: span}})
	require.NoError(t, err)
	assert.False(t, got.Holds(key, third), "the rate is full")

	require.NoError(t, tbl.ReleaseSlots(ctx, map[string][]rdb.Holder{key: {second}}))
	got, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: []rdb.Holder{third}, Expire: span}})
	require.NoError(t, err)
	assert.True(t, got.Holds(key, third), "the start given back makes room")
	assert.True(t, got.Holds(key, first), "the other start is kept")

	fourth := rdb.RateHolder(b, 2, "q")
	require.Eventually(t, func() bool {
		got, err = tbl.TakeSlots(ctx, []rdb.SlotTake{{Key: key, Limit: 2, Want: []rdb.Holder{fourth}, Expire: span}})
		return err == nil && got.Holds(key, fourth)
	}, 3*span, 100*time.Millisecond, "starts expire after the span")
	assert.GreaterOrEqual(t, time.Since(now), span, "not before it")
}
