package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestCheckTriggerFillsDefaults(t *testing.T) {
	mk := func(context.Context, map[string]any) (*job.Job, error) { return nil, nil }
	tr := Trigger{Name: "n", Table: "orders", Index: "updatedAt", Job: mk}
	assert.NoError(t, checkTrigger(&tr, "shop"))
	assert.Equal(t, "shop", tr.DB)
	assert.Equal(t, "updatedAt", tr.Field)
	assert.Equal(t, DefaultRescan, tr.Rescan)
	for _, bad := range []Trigger{
		{Table: "t", Index: "i", Job: mk},
		{Name: string(make([]byte, maxTriggerName+1)), Table: "t", Index: "i", Job: mk},
		{Name: "n", Index: "i", Job: mk},
		{Name: "n", Table: "t", Job: mk},
		{Name: "n", Table: "t", Index: "i"},
		{Name: "n", Table: "t", Index: "i", Job: mk, Rescan: -time.Second},
	} {
		assert.ErrorIs(t, checkTrigger(&bad, "db"), ErrInvalidTrigger, "%+v", bad)
		assert.ErrorIs(t, checkTrigger(&bad, "db"), job.ErrInvalid)
	}
}

func TestVersionOf(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		doc  map[string]any
		want any
		bad  string
	}{
		{doc: map[string]any{"v": at}, want: at},
		{doc: map[string]any{"v": 7.0}, want: 7.0},
		{doc: map[string]any{}, bad: "missing"},
		{doc: map[string]any{"v": nil}, bad: "missing"},
		{doc: map[string]any{"v": "yesterday"}, bad: "a string, not a time or a number"},
	} {
		v, err := versionOf(tc.doc, "v")
		if tc.bad != "" {
			assert.ErrorContains(t, err, tc.bad)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, v)
	}
}

// A version's job id is the same however often it is seen, and another for every other
// trigger, document or version; it is a job id.
func TestTriggerJobIDsAreOnePerVersion(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	id := triggerJobID("orders", "o1", at)
	assert.True(t, job.ValidID(id), id)
	assert.Equal(t, id, triggerJobID("orders", "o1", at.In(time.FixedZone("+00:00", 0))), "the zone does not count")
	seen := map[string]bool{id: true}
	for _, other := range []string{
		triggerJobID("other", "o1", at),
		triggerJobID("orders", "o2", at),
		triggerJobID("orders", "o1", at.Add(time.Millisecond)),
		triggerJobID("orders", 1.0, at),
		triggerJobID("orders", "o1", 1700000000.0),
	} {
		assert.False(t, seen[other], other)
		seen[other] = true
	}
}

func TestLagOf(t *testing.T) {
	now := time.Now()
	assert.Equal(t, 3*time.Second, lagOf(now.Add(-3*time.Second), now))
	assert.Zero(t, lagOf(now.Add(time.Second), now), "a time ahead of the clock")
	assert.Zero(t, lagOf(42.0, now), "a number says nothing of time")
}

func TestCursorsGoInTheIndexOrder(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		a, b rdb.TriggerCursor
		less bool
	}{
		{rdb.TriggerCursor{V: 1.0, ID: "z"}, rdb.TriggerCursor{V: 2.0, ID: "a"}, true},
		{rdb.TriggerCursor{V: 2.0, ID: "a"}, rdb.TriggerCursor{V: 1.0, ID: "z"}, false},
		{rdb.TriggerCursor{V: at, ID: "a"}, rdb.TriggerCursor{V: at, ID: "b"}, true},
		{rdb.TriggerCursor{V: at, ID: "b"}, rdb.TriggerCursor{V: at, ID: "b"}, false},
		{rdb.TriggerCursor{V: at, ID: "b"}, rdb.TriggerCursor{V: at.Add(time.Millisecond), ID: "a"}, true},
		{rdb.TriggerCursor{V: 5.0, ID: "a"}, rdb.TriggerCursor{V: at, ID: "a"}, true},
	} {
		assert.Equal(t, tc.less, cursorBefore(tc.a, tc.b), "%v < %v", tc.a, tc.b)
	}
}

// A cursor at the place it already is replaces it only to bring the exact epoch seconds
// of its time, which a cursor from the feed lacks.
func TestAdvanceTakesTheExactTimeAtTheSamePlace(t *testing.T) {
	at := time.Now()
	secs := float64(at.UnixNano()) / 1e9
	tr := &triggerRun{}
	tr.advance(rdb.TriggerCursor{V: at, ID: "b"})
	require.Nil(t, tr.cursor.T)
	tr.advance(rdb.TriggerCursor{V: at, ID: "b", T: &secs})
	require.NotNil(t, tr.cursor.T, "the same place, with the exact time")
	tr.advance(rdb.TriggerCursor{V: at, ID: "a", T: &secs})
	assert.Equal(t, "b", tr.cursor.ID, "a place before it never moves the cursor back")
	tr.advance(rdb.TriggerCursor{V: at, ID: "b"})
	assert.NotNil(t, tr.cursor.T, "nor does the same place without the exact time")
	tr.advance(rdb.TriggerCursor{V: at, ID: "c"})
	assert.Equal(t, "c", tr.cursor.ID)
}
