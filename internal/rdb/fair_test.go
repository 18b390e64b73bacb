package rdb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The due head of a priority is the dateEnable of the job a claim takes next among the
// due ones: not a later one, not a job not due yet, not one of another priority, not a
// finished one.
func TestDueHeadsAreTheOldestDueJobOfEachPriority(t *testing.T) {
	ctx := context.Background()
	tbl, insert := slotsTable(t)
	now := time.Now().Truncate(time.Millisecond)
	insert(job.Waiting, 0, now.Add(-2*time.Second))
	insert(job.Failed, 1, now.Add(-3*time.Second))
	insert(job.Waiting, 0, now.Add(time.Hour))    // not due
	insert(job.Completed, 1, now.Add(-time.Hour)) // finished
	heads, err := tbl.DueHeads(ctx, []int{int(job.Normal), int(job.High)})
	require.NoError(t, err)
	require.Contains(t, heads, int(job.Normal))
	assert.True(t, heads[int(job.Normal)].Equal(now.Add(-3*time.Second)), "got %v", heads[int(job.Normal)])
	assert.NotContains(t, heads, int(job.High), "no job of that priority")

	_, err = r.DB(tbl.DB).Table(tbl.Name).Insert(map[string]any{"id": "garbage", "status": "waiting", "priority": int(job.High), "dateEnable": "yesterday"}).RunWrite(tbl.Session)
	require.NoError(t, err)
	heads, err = tbl.DueHeads(ctx, []int{int(job.High)})
	require.NoError(t, err)
	assert.NotContains(t, heads, int(job.High), "a dateEnable that is not a time is no head")
}

// Turns of one group and priority never overlap, start no earlier than asked, follow on
// from the last taken, and are the group's own: another group, or another priority,
// starts from its own ask. A turn written by hand far ahead holds a group back
// TurnsAhead at most.
func TestTurnsFollowOnAndNeverOverlap(t *testing.T) {
	ctx := context.Background()
	tbl, _ := slotsTable(t)
	now := time.Now()
	from := rdb.TurnOfTime(now)

	firsts, err := tbl.TakeTurns(ctx, []rdb.TurnAsk{{Group: "a", Priority: 40, N: 5, From: from}, {Group: "b", Priority: 40, N: 3, From: from - 100}}, now)
	require.NoError(t, err)
	assert.Equal(t, []int64{from, from - 100}, firsts)

	firsts, err = tbl.TakeTurns(ctx, []rdb.TurnAsk{{Group: "a", Priority: 40, N: 1, From: from - 1000}, {Group: "a", Priority: 20, N: 1, From: from - 1000}}, now)
	require.NoError(t, err)
	assert.Equal(t, []int64{from + 5, from - 1000}, firsts, "a follows its last turn; its other priority does not")

	firsts, err = tbl.TakeTurns(ctx, []rdb.TurnAsk{{Group: "b", Priority: 40, N: 1, From: from + 50}}, now)
	require.NoError(t, err)
	assert.Equal(t, []int64{from + 50}, firsts, "a later ask starts where asked")

	// Eight adders at once: 8 × 10 turns, each once.
	var mu sync.Mutex
	var wg sync.WaitGroup
	taken := make(map[int64]int)
	for range 8 {
		wg.Go(func() {
			got, err := tbl.TakeTurns(ctx, []rdb.TurnAsk{{Group: "c", Priority: 40, N: 10, From: from}}, now)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for n := range int64(10) {
				taken[got[0]+n]++
			}
		})
	}
	wg.Wait()
	assert.Len(t, taken, 80)
	for turn, n := range taken {
		assert.Equal(t, 1, n, "turn %d", turn)
		assert.True(t, turn >= from && turn < from+80, "turn %d", turn)
	}

	side := r.DB(tbl.DB).Table(tbl.Name + rdb.SlotsSuffix)
	_, err = side.Insert([]any{
		map[string]any{"id": "turn:40:far", "turn": rdb.TurnOfTime(now.Add(1000 * time.Hour))},
		map[string]any{"id": "turn:40:junk", "turn": "soon"},
	}).RunWrite(tbl.Session)
	require.NoError(t, err)
	firsts, err = tbl.TakeTurns(ctx, []rdb.TurnAsk{{Group: "far", Priority: 40, N: 1, From: from}, {Group: "junk", Priority: 40, N: 1, From: from}}, now)
	require.NoError(t, err)
	assert.Equal(t, []int64{rdb.TurnOfTime(now.Add(rdb.TurnsAhead)), from}, firsts)
}

// The turns behind the due head of their priority go, those at or after it stay, and so do
// the slots document and anything written by hand that is not a turn; a table without
// the side table has none to remove.
func TestTurnsTheClaimsHavePassedAreRemoved(t *testing.T) {
	ctx := context.Background()
	tbl, _ := slotsTable(t)
	now := time.Now()
	head := now.Add(-time.Minute)
	side := r.DB(tbl.DB).Table(tbl.Name + rdb.SlotsSuffix)
	_, err := side.Insert([]any{
		map[string]any{"id": "turn:40:old", "turn": rdb.TurnOfTime(head) - 1},     // behind Normal's head
		map[string]any{"id": "turn:40:at-head", "turn": rdb.TurnOfTime(head)},     // at it: may have a job there
		map[string]any{"id": "turn:20:recent", "turn": rdb.TurnOfTime(now) - 100}, // High has no head: behind now
		map[string]any{"id": "turn:20:ahead", "turn": rdb.TurnOfTime(now) + 100},  // ahead of the clock
		map[string]any{"id": "turn:40:junk", "turn": "soon"},                      // not a turn
		map[string]any{"id": "slots", "keys": map[string]any{}},                   // the slots document
		map[string]any{"id": 42, "turn": 1},                                       // written by hand
	}).RunWrite(tbl.Session)
	require.NoError(t, err)
	n, err := tbl.PruneTurns(ctx, map[int]time.Time{int(job.Normal): head}, now, 1000)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	var ids []any
	require.NoError(t, tbl.ReadAll(ctx, side.Field("id"), &ids))
	assert.ElementsMatch(t, []any{"turn:40:at-head", "turn:20:ahead", "turn:40:junk", "slots", float64(42)}, ids)

	bare := &rdb.Table{Session: tbl.Session, DB: tbl.DB, Name: "nothing"}
	n, err = bare.PruneTurns(ctx, nil, now, 1000)
	require.NoError(t, err, "no side table: nothing to remove")
	assert.Zero(t, n)
}
