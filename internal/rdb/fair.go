package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// Groups take turns (job.SetGroup) by where AddJob places their jobs in the claim order,
// not by what a claim reads: the claim index orders jobs of one priority by dateEnable,
// and AddJob gives the jobs of a group, due now, consecutive turns of their group and
// priority, TurnsPerMilli turns to a millisecond of dateEnable, starting from the later of
// the group's last turn and the due head of the index. A group that starts to add while
// another has a backlog of thousands so starts at the head, beside it, and the two
// alternate (TurnsPerMilli jobs of each a millisecond), however long the backlog; a group
// that adds a burst has it spread over the milliseconds that follow, where the jobs of
// other groups find their places between them. The claims, the index and a Node.js
// worker's reads are unchanged: they see an order.
//
// TurnsPerMilli bounds one group's start rate at 1,000 × TurnsPerMilli jobs a second only
// when that group's backlog runs ahead of the clock, which needs a burst of more than
// TurnsPerMilli jobs a millisecond.
const TurnsPerMilli = 20

// TurnsAhead bounds how far past the clock a group's last turn counts: a burst of more
// than TurnsAhead × TurnsPerMilli jobs of one group (200,000) runs further ahead, and a
// later add of the group then shares the end of that burst's span rather than follow it;
// and a group whose jobs ahead were removed or cancelled never waits longer than this for
// turns they no longer use. A turn written by hand counts as this far ahead at most.
const TurnsAhead = 10 * time.Second

// TurnOfTime is t in turns: TurnsPerMilli a millisecond since the epoch.
func TurnOfTime(t time.Time) int64 { return t.UnixMilli() * TurnsPerMilli }

// TimeOfTurn is the dateEnable of turn n: the millisecond it falls in.
func TimeOfTurn(n int64) time.Time { return time.UnixMilli(n / TurnsPerMilli).UTC() }

// HeadOr is the due head of priority p in heads (from DueHeads), or now when p has none
// (or, the clocks differing, one after now): where the turns of p start from.
func HeadOr(heads map[int]time.Time, p int, now time.Time) time.Time {
	if h, ok := heads[p]; ok && h.Before(now) {
		return h
	}
	return now
}

// TurnAsk asks for N consecutive turns of Group's jobs of Priority, none before From.
type TurnAsk struct {
	Group    string
	Priority int
	N        int
	From     int64
}

// turnDoc is the id, in the slots side table (SlotsSuffix), of the document that holds
// the last turn taken by group's jobs of priority p: {id, turn}.
func turnDoc(group string, p int) string { return fmt.Sprintf("turn:%d:%s", p, group) }

// DueHeads returns, for each priority of prios, the dateEnable of the job a claim takes
// next among those due (the first in the claim index's order); a priority without a due
// job is left out. One range read a priority, in one query.
func (t *Table) DueHeads(ctx context.Context, prios []int) (map[int]time.Time, error) {
	out := make(map[int]time.Time, len(prios))
	if len(prios) == 0 {
		return out, nil
	}
	terms := make(map[string]any, len(prios))
	for _, p := range prios {
		lo := []any{-p, r.Now().ToEpochTime().Mul(-1), r.MinVal, r.MinVal}
		hi := []any{-p, r.MaxVal, r.MaxVal, r.MaxVal}
		terms[fmt.Sprint(p)] = t.claimRange(lo, hi).Map(func(doc r.Term) any {
			return doc.Field(docfmt.DateEnable).Default(nil)
		}).Filter(func(at r.Term) r.Term { return at.TypeOf().Eq("PTYPE<TIME>") }).Limit(1).CoerceTo("array")
	}
	var got map[string][]time.Time
	if err := t.ReadOne(ctx, r.Expr(terms), &got); err != nil {
		return nil, fmt.Errorf("queue %s: read the first due job of each priority: %w", t.Name, err)
	}
	for _, p := range prios {
		if at := got[fmt.Sprint(p)]; len(at) > 0 {
			out[p] = at[0]
		}
	}
	return out, nil
}

// TakeTurns takes the turns of asks, in one atomic write a group and priority, and
// returns the first turn of each ask: the later of the group's last turn and the ask's
// From. Two adds that take turns of one group at once get turns that never overlap.
func (t *Table) TakeTurns(ctx context.Context, asks []TurnAsk, now time.Time) ([]int64, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	ceiling := TurnOfTime(now.Add(TurnsAhead))
	rows := make([]turnRow, len(asks))
	for i, a := range asks {
		rows[i] = turnRow{ID: turnDoc(a.Group, a.Priority), From: a.From, N: a.N}
	}
	side := t.Side(SlotsSuffix)
	take := func(rows []turnRow) (WriteResult, error) {
		return t.Write(ctx, r.Expr(rows).ForEach(func(a r.Term) any {
			return side.Get(a.Field("id")).Replace(func(doc r.Term) any {
				last := r.Branch(doc.Eq(nil), nil, fieldOr(doc, "turn", nil))
				last = r.Branch(last.TypeOf().Eq("NUMBER").And(last.Le(ceiling)), last, r.Branch(last.TypeOf().Eq("NUMBER"), ceiling, 0))
				first := r.Branch(last.Gt(a.Field("from")), last, a.Field("from"))
				return map[string]any{"id": a.Field("id"), "turn": first.Add(a.Field("n"))}
			}, r.ReplaceOpts{ReturnChanges: "always"})
		}))
	}
	firsts := make(map[string]int64, len(asks))
	res, err := take(rows)
	if err == nil {
		firsts = turnsTaken(res, rows)
		if missing := rowsWithout(rows, firsts); len(missing) > 0 {
			// A server that skips the replace of a missing document rather than insert it
			// (reqlite): make the documents, without a turn, and take those again.
			empty := make([]map[string]any, len(missing))
			for i, m := range missing {
				empty[i] = map[string]any{"id": m.ID}
			}
			if _, err = t.Write(ctx, side.Insert(empty, r.InsertOpts{Conflict: "update"})); err == nil {
				if res, err = take(missing); err == nil {
					for id, n := range turnsTaken(res, missing) {
						firsts[id] = n
					}
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: take the turns of groups: %w", t.Name, err)
	}
	out := make([]int64, len(asks))
	for i, row := range rows {
		n, ok := firsts[row.ID]
		if !ok {
			return nil, fmt.Errorf("queue %s: take the turns of groups: the write did not return the turn of %s", t.Name, row.ID)
		}
		out[i] = n
	}
	return out, nil
}

// turnRow is one ask of TakeTurns as its write reads it.
type turnRow struct {
	ID   string `rethinkdb:"id"`
	From int64  `rethinkdb:"from"`
	N    int    `rethinkdb:"n"`
}

// turnsTaken reads the first turn of each row a take wrote from its changes: the new
// turn less the row's count.
func turnsTaken(res WriteResult, rows []turnRow) map[string]int64 {
	counts := make(map[string]int, len(rows))
	for _, row := range rows {
		counts[row.ID] = row.N
	}
	out := make(map[string]int64, len(rows))
	for _, c := range res.Changes {
		doc, _ := c.NewValue.(map[string]any)
		id, _ := doc["id"].(string)
		turn, ok := doc["turn"].(float64)
		if n, asked := counts[id]; asked && ok {
			out[id] = int64(turn) - int64(n)
		}
	}
	return out
}

// rowsWithout is the rows whose id got has not.
func rowsWithout(rows []turnRow, got map[string]int64) []turnRow {
	var out []turnRow
	for _, row := range rows {
		if _, ok := got[row.ID]; !ok {
			out = append(out, row)
		}
	}
	return out
}

// PruneTurns removes, at most most at a time, the turn documents whose last turn is
// before the due head of their priority (heads, from DueHeads; now for a priority
// without one): every job of the group placed at those turns has left the waiting jobs,
// so the document says no more than its absence (TakeTurns starts from the head). Each
// is removed by an atomic replace that checks its turn again, so that an add that takes
// turns meanwhile keeps its document. It returns how many it removed; a table without
// the side table has none.
func (t *Table) PruneTurns(ctx context.Context, heads map[int]time.Time, now time.Time, most int) (int, error) {
	below := make(map[string]any, len(priorities))
	for _, p := range priorities {
		below[fmt.Sprint(int(p))] = TurnOfTime(HeadOr(heads, int(p), now))
	}
	side := t.Side(SlotsSuffix)
	stale := func(below, d r.Term) r.Term {
		id := fieldOr(d, "id", nil)
		parts := id.Split(":", 2)
		return id.TypeOf().Eq("STRING").And(id.Match("^turn:-?[0-9]+:")).
			And(fieldOr(d, "turn", nil).TypeOf().Eq("NUMBER")).
			And(d.Field("turn").Lt(fieldOr(below, parts.Nth(1), 0)))
	}
	term := r.Expr(below).Do(func(below r.Term) any {
		return side.Filter(func(d r.Term) r.Term { return stale(below, d) }).Limit(most).ForEach(func(d r.Term) any {
			return side.Get(d.Field("id")).Replace(func(cur r.Term) any {
				return r.Branch(cur.Ne(nil).And(stale(below, cur)), nil, cur)
			})
		})
	})
	res, err := t.Write(ctx, term)
	if NoTable(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue %s: remove the turns of groups behind the claims: %w", t.Name, err)
	}
	return res.Deleted, nil
}
