package rdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Triggers turn the versions of a user's table into jobs (queue.Trigger). Each trigger has
// a document in the side table TriggersSuffix, keyed by its name: its declaration (the
// watched table, its index and the field the index holds), its cursor (every version at
// or below it in the index's order has its job), what it made and skipped, its lag, and
// the lease of the one process that runs it.
//
// The declaration is written by every process that declares the trigger (a merge that
// keeps the rest); the cursor, counters and lag only by the runner that holds the lease,
// each write guarded by it, so a runner that lost its lease (cut off while another took
// over) changes nothing.

// TriggersSuffix names the side table of a queue's triggers. The Node.js library never
// reads it.
const TriggersSuffix = "_triggers"

// TriggerCursor is a place in a trigger's index: the index value V (a time or a number)
// and, among the documents of that value, the id of the last one done. T, when set, is a
// time's epoch seconds exactly as the server holds them (a time.Time round trip through
// this driver need not give back the same instant, and a bound off by a bit would pass
// over the documents of the value).
type TriggerCursor struct {
	V  any      `rethinkdb:"v"`
	T  *float64 `rethinkdb:"t,omitempty"`
	ID any      `rethinkdb:"id"`
}

// Bound is the cursor's value in a query: the exact time when T says it.
func (c TriggerCursor) Bound() any {
	if c.T != nil {
		return r.EpochTime(*c.T)
	}
	return c.V
}

// Version is a document of a watched table, with its index value's exact epoch seconds
// when it is a time.
type Version struct {
	Doc map[string]any `rethinkdb:"doc"`
	T   *float64       `rethinkdb:"t"`
}

// Cursor is the place of v in the index of field.
func (v Version) Cursor(field string) TriggerCursor {
	return TriggerCursor{V: v.Doc[field], T: v.T, ID: v.Doc["id"]}
}

// TriggerRunner is the lease of the process that runs a trigger.
type TriggerRunner struct {
	Queue string    `rethinkdb:"queue"`
	Host  string    `rethinkdb:"host"`
	PID   int       `rethinkdb:"pid"`
	Since time.Time `rethinkdb:"since"`
	Until time.Time `rethinkdb:"until"`
}

// StoredTrigger is a trigger's document.
type StoredTrigger struct {
	Name  string `rethinkdb:"id"`
	DB    string `rethinkdb:"db"`
	Table string `rethinkdb:"table"`
	Index string `rethinkdb:"index"`
	Field string `rethinkdb:"field"`
	// Rescan is the re-scan window, in milliseconds.
	Rescan float64        `rethinkdb:"rescan"`
	Cursor *TriggerCursor `rethinkdb:"cursor,omitempty"`
	// Jobs counts the jobs the trigger made, Skipped the versions it skipped (a document
	// it cannot read, a Job func that failed); LastSkip says why the last was.
	Jobs     int64  `rethinkdb:"jobs"`
	Skipped  int64  `rethinkdb:"skipped"`
	LastSkip string `rethinkdb:"lastSkip"`
	// Lag is how far behind the runner was (seconds) at LagAt.
	Lag    float64        `rethinkdb:"lag"`
	LagAt  time.Time      `rethinkdb:"lagAt"`
	Runner *TriggerRunner `rethinkdb:"runner,omitempty"`
}

// PutTrigger writes the declaration of a trigger, keeping its cursor, counters and lease.
func (t *Table) PutTrigger(ctx context.Context, s StoredTrigger) error {
	doc := map[string]any{"id": s.Name, "db": s.DB, "table": s.Table, "index": s.Index, "field": s.Field, "rescan": s.Rescan}
	_, err := t.Write(ctx, t.Side(TriggersSuffix).Insert(doc, r.InsertOpts{Conflict: "update"}))
	return err
}

// DeleteTrigger removes the trigger name and reports whether there was one.
func (t *Table) DeleteTrigger(ctx context.Context, name string) (bool, error) {
	return t.deleteSide(ctx, TriggersSuffix, name)
}

// Triggers reads every trigger, by name.
func (t *Table) Triggers(ctx context.Context) ([]StoredTrigger, error) {
	var out []StoredTrigger
	tbl := t.Side(TriggersSuffix)
	err := t.readSide(ctx, tbl, tbl.OrderBy("id"), &out)
	return out, err
}

// Trigger reads the trigger name; ok is false when there is none.
func (t *Table) Trigger(ctx context.Context, name string) (s StoredTrigger, ok bool, err error) {
	var docs []StoredTrigger
	tbl := t.Side(TriggersSuffix)
	if err := t.readSide(ctx, tbl, tbl.GetAll(name), &docs); err != nil || len(docs) == 0 {
		return StoredTrigger{}, false, err
	}
	return docs[0], true, nil
}

// ErrLeaseLost is returned by the guarded writes of a runner whose lease another holds.
var ErrLeaseLost = errors.New("the trigger's lease is another process's")

// TakeTriggerLease takes, or renews, the lease of trigger name for runner, until lease
// from the server's now: when nobody holds it, its holder's has ended, or runner holds it
// already. It returns the trigger as the write left it, and whether runner holds the
// lease; ok is false when the trigger does not exist.
func (t *Table) TakeTriggerLease(ctx context.Context, name string, runner TriggerRunner, lease time.Duration) (s StoredTrigger, held, ok bool, err error) {
	mine := map[string]any{"queue": runner.Queue, "host": runner.Host, "pid": runner.PID}
	term := t.Side(TriggersSuffix).Get(name).Update(func(doc r.Term) any {
		cur := doc.Field("runner").Default(nil)
		free := cur.Eq(nil).Or(cur.Field("until").Default(r.MinVal).Lt(r.Now()))
		ours := cur.Ne(nil).And(cur.Field("queue").Default(nil).Eq(runner.Queue))
		until := r.Now().Add(lease.Seconds())
		return r.Branch(
			ours, map[string]any{"runner": map[string]any{"until": until}},
			free, map[string]any{"runner": r.Expr(mine).Merge(map[string]any{"since": r.Now(), "until": until})},
			map[string]any{})
	}, r.UpdateOpts{ReturnChanges: "always"})
	var res struct {
		Changes []struct {
			New *StoredTrigger `rethinkdb:"new_val"`
		} `rethinkdb:"changes"`
		Skipped int `rethinkdb:"skipped"`
	}
	if err := t.WriteOne(ctx, term, &res); err != nil {
		return StoredTrigger{}, false, false, fmt.Errorf("queue %s: take the lease of trigger %q: %w", t.Name, name, err)
	}
	if len(res.Changes) == 0 || res.Changes[0].New == nil {
		return StoredTrigger{}, false, false, nil
	}
	s = *res.Changes[0].New
	return s, s.Runner != nil && s.Runner.Queue == runner.Queue, true, nil
}

// ReleaseTriggerLease ends runner's lease of trigger name at once, so that another
// process takes the trigger over without waiting for it to end.
func (t *Table) ReleaseTriggerLease(ctx context.Context, name, runner string) error {
	_, err := t.Write(ctx, t.Side(TriggersSuffix).Get(name).Update(func(doc r.Term) any {
		return r.Branch(doc.Field("runner").Field("queue").Default(nil).Eq(runner),
			map[string]any{"runner": map[string]any{"until": r.Now()}}, map[string]any{})
	}))
	return err
}

// TriggerProgress is what a runner records of its work: where its cursor is now, what it
// made and skipped since its last record, why it skipped the last, and its lag.
type TriggerProgress struct {
	Cursor        *TriggerCursor
	Jobs, Skipped int64
	LastSkip      string
	Lag           time.Duration
}

// RecordTrigger writes p to trigger name and renews runner's lease, only while runner
// holds it (ErrLeaseLost otherwise). A cursor only moves forward: one below the stored
// one (a runner catching up again behind a later one's progress) leaves it.
func (t *Table) RecordTrigger(ctx context.Context, name, runner string, lease time.Duration, p TriggerProgress) error {
	term := t.Side(TriggersSuffix).Get(name).Update(func(doc r.Term) any {
		set := map[string]any{
			"jobs":    doc.Field("jobs").Default(0).Add(p.Jobs),
			"skipped": doc.Field("skipped").Default(0).Add(p.Skipped),
			"lag":     p.Lag.Seconds(),
			"lagAt":   r.Now(),
			"runner":  map[string]any{"until": r.Now().Add(lease.Seconds())},
		}
		if p.LastSkip != "" {
			set["lastSkip"] = p.LastSkip
		}
		if c := p.Cursor; c != nil {
			old := doc.Field("cursor").Default(nil)
			ahead := old.Eq(nil).Or(r.Expr([]any{c.Bound(), c.ID}).Gt([]any{old.Field("v"), old.Field("id")}))
			// Every field of the cursor is written (a null t too): an update merges objects.
			cur := map[string]any{"v": c.Bound(), "t": nil, "id": c.ID}
			if c.T != nil {
				cur["t"] = *c.T
			}
			set["cursor"] = r.Branch(ahead, cur, old)
		}
		return r.Branch(doc.Field("runner").Field("queue").Default(nil).Eq(runner), set, map[string]any{})
	})
	res, err := t.Write(ctx, term)
	if err != nil {
		return fmt.Errorf("queue %s: record the progress of trigger %q: %w", t.Name, name, err)
	}
	if res.Replaced == 0 && res.Unchanged > 0 || res.Skipped > 0 {
		return ErrLeaseLost
	}
	return nil
}

// TriggerSource is the watched table of a trigger: the documents of Table in DB, in the
// order of Index, a secondary index on Field.
type TriggerSource struct {
	DB, Table, Index, Field string
}

// Term is the watched table.
func (src TriggerSource) Term() r.Term { return r.DB(src.DB).Table(src.Table) }

// CheckTriggerSource reports why src cannot be watched: its table or its index is
// missing (wrapping ErrNoTriggerSource), or the server could not be asked.
func (t *Table) CheckTriggerSource(ctx context.Context, src TriggerSource) error {
	var indexes []string
	err := t.ReadAll(ctx, src.Term().IndexList(), &indexes)
	if NoTable(err) {
		return fmt.Errorf("%w: table %s.%s does not exist", ErrNoTriggerSource, src.DB, src.Table)
	}
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		if ix == src.Index {
			return nil
		}
	}
	return fmt.Errorf("%w: table %s.%s has no index %q (it has %v)", ErrNoTriggerSource, src.DB, src.Table, src.Index, indexes)
}

// ErrNoTriggerSource is wrapped by the error of a trigger whose table or index is missing.
var ErrNoTriggerSource = errors.New("queue: no such table or index to watch")

// ReadVersions reads up to n documents of src in its index's order, from the cursor from
// (closed; nil: from the start); with ties, the documents of from's value up to its id
// are left out (the index orders the documents of one value by id).
func (t *Table) ReadVersions(ctx context.Context, src TriggerSource, from *TriggerCursor, ties bool, n int) ([]Version, error) {
	lo := any(r.MinVal)
	if from != nil {
		lo = from.Bound()
	}
	term := src.Term().Between(lo, r.MaxVal, r.BetweenOpts{Index: src.Index, LeftBound: "closed"}).
		OrderBy(r.OrderByOpts{Index: src.Index})
	if from != nil && ties {
		// Past the cursor: a value beyond it, or its value and an id beyond its id. The
		// documents of one value are few (they tie on a time to the millisecond).
		term = term.Filter(func(doc r.Term) r.Term {
			return doc.Field(src.Field).Default(nil).Ne(lo).Or(doc.Field("id").Gt(from.ID))
		})
	}
	term = term.Limit(n).Map(func(doc r.Term) any {
		v := doc.Field(src.Field).Default(nil)
		return map[string]any{"doc": doc, "t": r.Branch(v.TypeOf().Eq("PTYPE<TIME>"), v.ToEpochTime(), nil)}
	})
	var out []Version
	if err := t.ReadAll(ctx, term, &out); err != nil {
		return nil, fmt.Errorf("queue %s: read the versions of %s.%s: %w", t.Name, src.DB, src.Table, err)
	}
	return out, nil
}

// ExistingIDs returns those of ids that are jobs of the table.
func (t *Table) ExistingIDs(ctx context.Context, ids []string) (map[string]bool, error) {
	var found []string
	if err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Field("id"), &found); err != nil {
		return nil, fmt.Errorf("queue %s: look up jobs: %w", t.Name, err)
	}
	out := make(map[string]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}
