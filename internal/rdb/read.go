package rdb

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// ReadJobs runs a query that returns job documents and reads them as jobs attached to s.
func (t *Table) ReadJobs(ctx context.Context, s Store, term r.Term) ([]*job.Job, error) {
	var docs []map[string]any
	if err := t.ReadAll(ctx, term, &docs); err != nil {
		return nil, err
	}
	jobs := make([]*job.Job, len(docs))
	for i, doc := range docs {
		j, err := FromDocument(s, doc)
		if err != nil {
			return nil, err
		}
		jobs[i] = j
	}
	return jobs, nil
}

// GetJobs reads the jobs ids that are in the table, in no particular order.
func (t *Table) GetJobs(ctx context.Context, s Store, ids []string) ([]*job.Job, error) {
	return t.ReadJobs(ctx, s, t.Term().GetAll(Anys(ids)...))
}

// FindJobs reads the jobs that filter (a ReQL filter predicate: an object or a function
// of the document) keeps, oldest first. It reads the whole table.
func (t *Table) FindJobs(ctx context.Context, s Store, filter any) ([]*job.Job, error) {
	term := t.Term().Filter(func(doc r.Term) r.Term {
		return doc.Field("id").Ne(job.StateDocumentID)
	}).Filter(filter).OrderBy("dateCreated")
	return t.ReadJobs(ctx, s, term)
}

// byName is the jobs named name, through the name index.
func (t *Table) byName(name string) r.Term { return t.Term().GetAllByIndex(IndexName, name) }

// JobsNamed reads the jobs named name, oldest first.
func (t *Table) JobsNamed(ctx context.Context, s Store, name string) ([]*job.Job, error) {
	return t.ReadJobs(ctx, s, t.byName(name).OrderBy("dateCreated"))
}

// HasJobNamed reports whether a job is named name, reading no job.
func (t *Table) HasJobNamed(ctx context.Context, name string) (bool, error) {
	var empty bool
	err := t.ReadOne(ctx, t.byName(name).IsEmpty(), &empty)
	return !empty, err
}

// CountByStatus counts the jobs by status with one grouped count on the status index.
// Documents without a string status (the State Document) are left out.
func (t *Table) CountByStatus(ctx context.Context) (map[job.Status]int, error) {
	var groups []struct {
		Group     any `rethinkdb:"group"`
		Reduction int `rethinkdb:"reduction"`
	}
	if err := t.ReadAll(ctx, t.Term().GroupByIndex(IndexStatus).Count(), &groups); err != nil {
		return nil, err
	}
	counts := make(map[job.Status]int, len(groups))
	for _, g := range groups {
		if status, ok := g.Group.(string); ok {
			counts[job.Status(status)] += g.Reduction
		}
	}
	return counts, nil
}

// State reads the state the State Document records ("" when there is none).
func (t *Table) State(ctx context.Context) (string, error) {
	var state struct {
		State string `rethinkdb:"state"`
	}
	err := t.ReadOne(ctx, t.Term().Get(job.StateDocumentID).Default(map[string]any{}), &state)
	return state.State, err
}

// OldestWaiting is how long the oldest due job of table (waiting, or failed and due for
// its retry) has waited since its dateEnable, as of now; 0 when there is none. It reads
// at most one entry per priority of IndexInactivePriorityDateCreated, which orders each
// priority's jobs by dateEnable, so that it also works on tables only the Node.js
// library has written: a few index reads, never a scan. (Jobs of a priority other than
// the six named ones are not seen.)
func OldestWaiting(ctx context.Context, s r.QueryExecutor, table r.Term, now time.Time) (time.Duration, error) {
	var oldest r.Term
	for i, p := range priorities {
		first := table.Between([]any{int(p), r.MinVal, r.MinVal}, []any{int(p), now, r.MaxVal},
			r.BetweenOpts{Index: IndexInactivePriorityDateCreated}).
			OrderBy(r.OrderByOpts{Index: IndexInactivePriorityDateCreated}).Limit(1)
		if i == 0 {
			oldest = first
		} else {
			oldest = oldest.Union(first)
		}
	}
	cur, err := oldest.Field("dateEnable").Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return 0, err
	}
	var enables []time.Time
	if err := cur.All(&enables); err != nil {
		return 0, err
	}
	var age time.Duration
	for _, e := range enables {
		age = max(age, now.Sub(e))
	}
	return age, nil
}
