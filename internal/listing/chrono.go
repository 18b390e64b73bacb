package listing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The jobs of one status are paged in time order through the index that holds them, both
// ways, from a cursor: the finished ones newest first by dateFinished, the active ones by
// dateEnable (their lease, so the latest started first), the waiting and failed ones in
// the order workers take them (priority, then dateEnable). Each page reads its own
// entries of the index and no more, so a page of a table of a million finished jobs costs
// what a page of ten does.
//
// Two lists have no time order and are paged by an index all the same. The blocked jobs
// (of workflows, waiting for their parents) are the entries of key "blocked" of the
// status index, which RethinkDB orders by id: a page reads the entries of the key from
// its start (or its end, going back) and skips those before its cursor, since a range of
// a secondary index cannot start at an id. A page at position n so reads n entries: the
// first pages cost what any page costs (2 ms of a dashboard's request on RethinkDB 2.4.4,
// with a million finished jobs beside them), the page after 9,950 of ten thousand blocked
// jobs 50 to 100 ms. The unfinished jobs of a sequence are its range of IndexSequence, in the
// order they run ([key, place, id]: keys that never tie, so a page starts at its cursor).

// order is how the jobs of a status are paged.
type order struct {
	index string
	// fields make the index key: one field, or several for a compound key.
	fields []string
	// desc lists the highest key first.
	desc bool
	// shared is set when the index holds other statuses too, more than this one (the
	// finished index holds completed jobs beside cancelled and terminated ones).
	shared bool
	// lo and hi, when set, bound the list to a range of the index (both ends in it): the
	// one key of the blocked jobs, the keys of one sequence. Unset: the whole index.
	lo, hi any
}

// orderOf is the order of status, false for a status without one.
func orderOf(status string) (order, bool) {
	switch job.Status(status) {
	case job.Completed:
		return order{index: rdb.IndexFinishedDateFinished, fields: []string{"dateFinished"}, desc: true}, true
	case job.Cancelled, job.Terminated:
		return order{index: rdb.IndexFinishedDateFinished, fields: []string{"dateFinished"}, desc: true, shared: true}, true
	case job.Active:
		return order{index: rdb.IndexActiveDateEnable, fields: []string{"dateEnable"}, desc: true}, true
	case job.Waiting, job.Failed:
		return order{index: rdb.IndexInactivePriorityDateCreated, fields: []string{"priority", "dateEnable", "dateCreated"}}, true
	case job.Blocked:
		return order{index: rdb.IndexStatus, fields: []string{"status"}, lo: status, hi: status}, true
	}
	return order{}, false
}

// sequenceOrder is the order of the unfinished jobs of sequence key: the order they run
// in. With a status, the index holds the sequence's other unfinished jobs beside that
// status's.
func sequenceOrder(key, status string) order {
	return order{index: rdb.IndexSequence, fields: []string{docfmt.Sequence, docfmt.SequenceAt, "id"}, shared: status != "",
		lo: []any{key, r.MinVal, r.MinVal}, hi: []any{key, r.MaxVal, r.MaxVal}}
}

// order is the order q lists in: a sequence's (when q.Sequence is set and q.Status, if
// any, is one its index holds), else q.Status's.
func (q Query) order() (order, error) {
	if q.Sequence != "" {
		switch job.Status(q.Status) {
		case "", job.Waiting, job.Active, job.Failed:
			return sequenceOrder(q.Sequence, q.Status), nil
		}
	}
	if q.Status == "" {
		return order{}, fmt.Errorf("%w: give a status (or a sequence) to list in order", job.ErrInvalid)
	}
	o, ok := orderOf(q.Status)
	if !ok {
		return order{}, fmt.Errorf("%w: status %q has no time order", job.ErrInvalid, q.Status)
	}
	return o, nil
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

// ChronoPage is a page of one status's jobs in its order (see orderOf), or of a
// sequence's, with the cursors of the pages on each side: Older continues the list, Newer
// goes back towards its start; empty where there is nothing (Newer: the page starts the
// list). A bounded page (a search, a name, a group, cancelled or terminated jobs: see
// Query.bounded) also says how many jobs it looked at: fewer jobs than asked for with an
// Older cursor mean that it stopped at SearchScan, and the list goes on from there.
type ChronoPage struct {
	Jobs         []Job
	Older, Newer string
	Scanned      int
}

// Query is what Chrono reads.
type Query struct {
	// Status is the status whose jobs are listed, in its order (see orderOf); Name and
	// Group, when set, keep the jobs of that name and group (job.SetGroup), a bounded page
	// at a time (no index holds them).
	Status, Name, Group string
	// Sequence, when set, lists the unfinished jobs of that sequence (job.SetSequence) in
	// the order they run, through the sequence index, those of Status only when it is set.
	// With a status that index does not hold (blocked, finished) it is a filter of that
	// status's list, a bounded page at a time.
	Sequence string
	// From is a cursor of an earlier page: the page reads the jobs after it, or before it
	// when Newer is set. Empty: from the start of the list.
	From  string
	Newer bool
	Limit int
	// A search keeps the jobs whose data holds Value at the path Field (dots between the
	// names: "customer.id"), when Field is set, and whose log has an entry whose message
	// or error contains Text (in any case), when Text is set. A search page looks at
	// SearchScan jobs of the status at most.
	Field string
	Value any
	Text  string
}

// SearchScan bounds the jobs one page of a search looks at (and one page of a name or a
// group, or of cancelled or terminated jobs, which share their index with the completed
// ones): about 100 ms of server time on RethinkDB 2.4.4 while it is busy, whatever the
// table holds.
const SearchScan = 500

// searchScan is SearchScan, but for tests.
var searchScan = SearchScan

func (q Query) search() bool { return q.Field != "" || q.Text != "" }

// bounded tells a page that looks at searchScan entries of the index at most and shows
// those that match: a search, a name, a group, a sequence read off another index than its
// own, or a status that shares its index with a bigger one could otherwise read the whole
// index to fill a page.
func (q Query) bounded(o order) bool {
	return q.search() || q.Name != "" || q.Group != "" || (q.Sequence != "" && o.index != rdb.IndexSequence) || o.shared
}

// ParseValue reads the value a search compares a field of data with, as typed by an
// operator: JSON (42, true, "42", {"a":1}) when it reads as JSON, else the text itself.
func ParseValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}

// Chrono reads a page of the jobs of q.Status in the status's order, or of q.Sequence in
// the sequence's.
func Chrono(ctx context.Context, s r.QueryExecutor, table r.Term, q Query) (ChronoPage, error) {
	o, err := q.order()
	if err != nil {
		return ChronoPage{}, err
	}
	var at *cursor
	if q.From != "" {
		c, err := parseCursor(q.From, len(o.fields))
		if err != nil {
			return ChronoPage{}, err
		}
		at = &c
	}
	back := q.Newer && at != nil
	// Reading towards the start of the list reads the index the other way round.
	bounded := q.bounded(o)
	term := o.query(table, q, at, o.desc != back, bounded)
	if bounded {
		term = term.Limit(searchScan)
	} else {
		term = term.Limit(q.Limit + 1)
	}
	if o.index == rdb.IndexSequence {
		// A table without the index never had a job of a sequence: it lists none. Asked
		// first rather than told by an error, whose text servers word differently.
		term = r.Branch(table.IndexList().Contains(o.index), term.CoerceTo("array"), r.Expr([]any{}))
	}
	rows, err := readRows(ctx, s, term)
	if err != nil && o.index == rdb.IndexSequence && rdb.NoSequenceIndex(err) {
		return ChronoPage{}, fmt.Errorf("the index of sequences is being built (a job of a sequence was added for the first time): try again in a moment: %w", err)
	}
	if err != nil {
		return ChronoPage{}, err
	}
	// The rows the page covers, and whether the list goes on beyond them.
	shown, more := rows, false
	switch {
	case bounded:
		shown = nil
		for _, row := range rows {
			if !row.Match {
				continue
			}
			if len(shown) == q.Limit {
				more = true
				break
			}
			shown = append(shown, row)
		}
		if !more && len(rows) == searchScan {
			// Cut short by the scan: the page covers every job looked at, and the search
			// goes on from the last.
			more = true
			if last := rows[len(rows)-1]; !last.Match {
				shown = append(shown, row{Key: last.Key, Doc: last.Doc, cutHere: true})
			}
		}
	case len(rows) > q.Limit:
		shown, more = rows[:q.Limit], true
	}
	p := pageOf(shown, at, back, more)
	if bounded {
		p.Scanned = len(rows)
	}
	return p, nil
}

// pageOf makes the page of rows, read after the cursor at (back: before it), with more
// saying whether the list goes on beyond the last row read.
func pageOf(rows []row, at *cursor, back, more bool) ChronoPage {
	if back {
		slices.Reverse(rows)
	}
	var p ChronoPage
	for _, row := range rows {
		if !row.cutHere {
			p.Jobs = append(p.Jobs, From(row.Doc))
		}
	}
	if len(rows) == 0 {
		return p
	}
	first, last := rows[0], rows[len(rows)-1]
	if more || back {
		p.Older = cursor{Key: last.Key, ID: fmt.Sprint(last.Doc["id"])}.String()
	}
	if at != nil && (!back || more) {
		p.Newer = cursor{Key: first.Key, ID: fmt.Sprint(first.Doc["id"])}.String()
	}
	return p
}

// matches is true for a document the search keeps. Every step holds on a document of
// any shape (written by hand): what is not of the type the search reads does not match.
// (Default catches a missing field, not a field read on a value that is no object.)
func (q Query) matches(doc r.Term) r.Term {
	keep := r.Expr(true)
	if q.Status != "" {
		keep = doc.Field("status").Eq(q.Status)
	}
	for field, want := range map[string]string{"name": q.Name, docfmt.Group: q.Group, docfmt.Sequence: q.Sequence} {
		if want != "" {
			keep = keep.And(doc.Field(field).Default(nil).Eq(want))
		}
	}
	if q.Field != "" {
		v := doc.Field("data").Default(nil)
		for _, f := range strings.Split(q.Field, ".") {
			v = r.Branch(v.TypeOf().Eq("OBJECT"), v.Field(f).Default(nil), nil)
		}
		keep = keep.And(v.Eq(q.Value))
	}
	if q.Text != "" {
		pattern := "(?i)" + regexp.QuoteMeta(q.Text)
		text := func(e r.Term, f string) r.Term {
			v := e.Field(f).Default(nil)
			return r.Branch(v.TypeOf().Eq("STRING"), v.Match(pattern).Ne(nil), false)
		}
		log := doc.Field("log").Default(nil)
		keep = keep.And(r.Branch(log.TypeOf().Eq("ARRAY"), log.Contains(func(e r.Term) r.Term {
			return r.Branch(e.TypeOf().Eq("OBJECT"), text(e, "message").Or(text(e, "errorMessage")), false)
		}), false))
	}
	return keep
}

// row is a job of a page with its index key; Match says whether a search keeps it.
type row struct {
	Doc   map[string]any `rethinkdb:"doc"`
	Key   []keyPart      `rethinkdb:"key"`
	Match bool           `rethinkdb:"match"`
	// cutHere marks the last job a search looked at, not shown: the page's end.
	cutHere bool
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

// query reads the jobs of q.Status (of q.Name, q.Group, q.Sequence) in the index's order
// (desc: from its highest key), within the order's range, after the cursor at in that
// order when it is not nil. A bounded page's rows say whether it keeps them.
func (o order) query(table r.Term, q Query, at *cursor, desc, bounded bool) r.Term {
	lo, hi := any(r.MinVal), any(r.MaxVal)
	if o.lo != nil {
		lo, hi = o.lo, o.hi
	}
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
	idx := any(o.index)
	if desc {
		idx = r.Desc(o.index)
	}
	// RethinkDB reads the jobs of one key in id order (the other way round, descending),
	// which the cursor counts on. (An id as a second key, for a server that does not,
	// makes RethinkDB 2.4.4 sort the range in memory, and with thousands of jobs of one
	// key answer one of them: measured, 10,000 completed jobs of one dateFinished gave a
	// page of 1 in a second. reqlite orders the jobs of one key as they were inserted, so
	// the tests of pages within one key skip on it.)
	ordered := table.Between(lo, hi, opts).OrderBy(r.OrderByOpts{Index: idx})
	return ordered.Filter(func(d r.Term) r.Term {
		// A bounded page filters on its position alone, so that its cap counts entries
		// looked at; what it keeps is said by match below.
		keep := r.Expr(true)
		if !bounded && q.Status != "" {
			keep = d.Field("status").Eq(q.Status)
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
		m := map[string]any{"doc": d.Pluck(listFields...), "key": parts}
		if bounded {
			m["match"] = q.matches(d)
		}
		return m
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
