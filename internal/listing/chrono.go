package listing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The jobs of one status are paged in time order through the index that holds them, both
// ways, from a cursor: the finished ones newest first by dateFinished, the active ones by
// dateEnable (their lease, so the latest started first), the waiting and failed ones in
// the order workers take them (priority, then dateEnable). Each page reads its own
// entries of the index and no more, so a page of a table of a million finished jobs costs
// what a page of ten does.

// order is how the jobs of a status are paged.
type order struct {
	index string
	// fields make the index key: one field, or several for a compound key.
	fields []string
	// desc lists the highest key first.
	desc bool
}

// orderOf is the order of status, false for a status without one.
func orderOf(status string) (order, bool) {
	switch job.Status(status) {
	case job.Completed, job.Cancelled, job.Terminated:
		return order{index: rdb.IndexFinishedDateFinished, fields: []string{"dateFinished"}, desc: true}, true
	case job.Active:
		return order{index: rdb.IndexActiveDateEnable, fields: []string{"dateEnable"}, desc: true}, true
	case job.Waiting, job.Failed:
		return order{index: rdb.IndexInactivePriorityDateCreated, fields: []string{"priority", "dateEnable", "dateCreated"}}, true
	}
	return order{}, false
}

// keyPart is one field of an index key as a cursor carries it: a time as its epoch
// seconds, exactly as the server holds it (a time.Time round trip through this driver
// need not give back the same instant), anything else (a document written by hand) as
// it is.
type keyPart struct {
	T *float64 `json:"t,omitempty" rethinkdb:"t,omitempty"`
	V any      `json:"v" rethinkdb:"v"`
}

// term is the value the part stands for, in a query.
func (k keyPart) term() any {
	if k.T != nil {
		return r.EpochTime(*k.T)
	}
	return k.V
}

// cursor is where a page ends: the index key and the id of its last job.
type cursor struct {
	Key []keyPart `json:"k"`
	ID  string    `json:"id"`
}

func (c cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(s string, fields int) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(c.Key) != fields || c.ID == "" {
		return cursor{}, fmt.Errorf("%w: %q is not a page cursor of this list", job.ErrInvalid, s)
	}
	return c, nil
}

// ChronoPage is a page of one status's jobs in its order (see orderOf), with the cursors
// of the pages on each side: Older continues the list, Newer goes back towards its start;
// empty where there is nothing (Newer: the page starts the list).
type ChronoPage struct {
	Jobs         []Job
	Older, Newer string
}

// Chrono reads up to limit jobs of status (and name, when not empty) of table in the
// status's order: from the start of the list when from is empty, else the jobs after the
// cursor from (newer false: towards the end of the list) or before it (newer true).
func Chrono(ctx context.Context, s r.QueryExecutor, table r.Term, status, name, from string, newer bool, limit int) (ChronoPage, error) {
	o, ok := orderOf(status)
	if !ok {
		return ChronoPage{}, fmt.Errorf("%w: status %q has no time order", job.ErrInvalid, status)
	}
	var at *cursor
	if from != "" {
		c, err := parseCursor(from, len(o.fields))
		if err != nil {
			return ChronoPage{}, err
		}
		at = &c
	}
	// Reading towards the start of the list reads the index the other way round.
	desc := o.desc != (newer && at != nil)
	rows, err := readRows(ctx, s, o.query(table, status, name, at, desc).Limit(limit+1))
	if err != nil {
		return ChronoPage{}, err
	}
	more := len(rows) > limit
	rows = rows[:min(len(rows), limit)]
	if newer && at != nil {
		slices.Reverse(rows)
	}
	var p ChronoPage
	for _, row := range rows {
		p.Jobs = append(p.Jobs, From(row.Doc))
	}
	if len(rows) == 0 {
		return p, nil
	}
	first, last := rows[0], rows[len(rows)-1]
	if more || (newer && at != nil) {
		p.Older = cursor{Key: last.Key, ID: fmt.Sprint(last.Doc["id"])}.String()
	}
	if at != nil && (!newer || more) {
		p.Newer = cursor{Key: first.Key, ID: fmt.Sprint(first.Doc["id"])}.String()
	}
	return p, nil
}

// row is a job of a page with its index key.
type row struct {
	Doc map[string]any `rethinkdb:"doc"`
	Key []keyPart      `rethinkdb:"key"`
}

func readRows(ctx context.Context, s r.QueryExecutor, term r.Term) ([]row, error) {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return nil, err
	}
	var rows []row
	err = cur.All(&rows)
	return rows, err
}

// query reads the jobs of status in the index's order (desc: from its highest key),
// after the cursor at in that order when it is not nil.
func (o order) query(table r.Term, status, name string, at *cursor, desc bool) r.Term {
	lo, hi := any(r.MinVal), any(r.MaxVal)
	opts := r.BetweenOpts{Index: o.index, LeftBound: "closed", RightBound: "closed"}
	var bound any
	if at != nil {
		parts := make([]any, len(at.Key))
		for i, k := range at.Key {
			parts[i] = k.term()
		}
		bound = parts[0]
		if len(parts) > 1 {
			bound = parts
		}
		if desc {
			hi = bound
		} else {
			lo = bound
		}
	}
	idx, id := any(o.index), any("id")
	if desc {
		idx, id = r.Desc(o.index), r.Desc("id")
	}
	// RethinkDB reads the jobs of one key in id order; the id as a second key says so to
	// a server that does not (reqlite).
	return table.Between(lo, hi, opts).OrderBy(id, r.OrderByOpts{Index: idx}).Filter(func(d r.Term) r.Term {
		keep := d.Field("status").Eq(status)
		if name != "" {
			keep = keep.And(d.Field("name").Default(nil).Eq(name))
		}
		if at != nil {
			// Past the cursor: a key beyond it, or its key and an id beyond its id (the
			// index orders the jobs of one key by id).
			key := o.key(d)
			if desc {
				keep = keep.And(key.Lt(bound).Or(key.Eq(bound).And(d.Field("id").Lt(at.ID))))
			} else {
				keep = keep.And(key.Gt(bound).Or(key.Eq(bound).And(d.Field("id").Gt(at.ID))))
			}
		}
		return keep
	}).Map(func(d r.Term) any {
		parts := make([]any, len(o.fields))
		for i, f := range o.fields {
			v := d.Field(f)
			parts[i] = r.Branch(v.TypeOf().Eq("PTYPE<TIME>"), map[string]any{"t": v.ToEpochTime()}, map[string]any{"v": v})
		}
		return map[string]any{"doc": d.Pluck("id", "name", "status", "priority", "progress", "dateCreated"), "key": parts}
	})
}

// key is d's key in the index: the value of its one field, or the array of its fields.
func (o order) key(d r.Term) r.Term {
	if len(o.fields) == 1 {
		return d.Field(o.fields[0])
	}
	parts := make([]any, len(o.fields))
	for i, f := range o.fields {
		parts[i] = d.Field(f)
	}
	return r.Expr(parts)
}
