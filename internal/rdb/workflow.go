package rdb

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Workflows (job.SetDependsOn): a job with parents is added job.Blocked, a status no
// claim reads (the claim indexes of both libraries hold waiting and failed jobs only).
// Release makes it waiting once every parent has completed, CancelBlocked cancels it
// when one will not; both are compare-and-sets on the blocked status, so a child is
// released or cancelled once, whoever sees its parents finish. A parent lists its
// children (docfmt.Children, written before they are added), which is how they are
// found: no index holds them, so that the release of a child of a thousand parents
// rewrites no thousand index entries (on RethinkDB 2.4.4, a multi index by parent cost
// 10 to 25 ms more per write of such a child).

// Parent is a parent job as a child's release reads it: its status, and the completion
// log entry of its last completed run (nil when it has none), which the child carries;
// and its name, which the reasons of a cancel name.
type Parent struct {
	Status     job.Status     `rethinkdb:"status"`
	Completion map[string]any `rethinkdb:"completion"`
	Name       string         `rethinkdb:"name"`
}

// ReadParents reads the jobs ids as parents; an id missing from the table is left out.
func (t *Table) ReadParents(ctx context.Context, ids []string) (map[string]Parent, error) {
	out := make(map[string]Parent, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	term := t.Term().GetAll(Anys(ids)...).Map(func(doc r.Term) any {
		log := doc.Field(docfmt.Log).Default(nil)
		done := r.Branch(log.TypeOf().Eq("ARRAY"), log.Filter(func(e r.Term) r.Term {
			return e.Field("message").Default(nil).Eq(job.MessageCompleted)
		}), []any{})
		return map[string]any{"id": doc.Field(docfmt.ID), "status": doc.Field(docfmt.Status).Default(""),
			"completion": r.Branch(done.Count().Gt(0), done.Nth(-1).Pluck(Anys(resultFields)...), nil),
			"name":       r.Branch(doc.Field(docfmt.Name).Default(nil).TypeOf().Eq("STRING"), doc.Field(docfmt.Name), "")}
	})
	var rows []struct {
		ID any `rethinkdb:"id"`
		Parent
	}
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the parents of blocked jobs: %w", t.Name, err)
	}
	for _, row := range rows {
		if id, ok := row.ID.(string); ok {
			out[id] = row.Parent
		}
	}
	return out, nil
}

// Blocked is a blocked job and its parents.
type Blocked struct {
	ID      string
	Parents []string
}

// blockedRows decodes the rows of a read of blocked jobs (id and parents).
func blockedRows(rows []map[string]any) []Blocked {
	out := make([]Blocked, 0, len(rows))
	seen := make(map[string]bool, len(rows))
	for _, row := range rows {
		id, ok := row[docfmt.ID].(string)
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		list, _ := row[docfmt.DependsOn].([]any)
		b := Blocked{ID: id}
		for _, p := range list {
			if s, ok := p.(string); ok {
				b.Parents = append(b.Parents, s)
			}
		}
		out = append(out, b)
	}
	return out
}

// BlockedChildren returns the blocked jobs among the children that parents list
// (docfmt.Children) and the jobs known (children of parents that are no longer in the
// table, as their documents listed them), each once, with their parents.
func (t *Table) BlockedChildren(ctx context.Context, parents, known []string) ([]Blocked, error) {
	ids := slices.Clone(known)
	if len(parents) > 0 {
		var listed []any
		term := t.Term().GetAll(Anys(parents)...).ConcatMap(func(doc r.Term) any {
			kids := doc.Field(docfmt.Children).Default([]any{})
			return r.Branch(kids.TypeOf().Eq("ARRAY"), kids, []any{})
		}).Distinct()
		if err := t.ReadAll(ctx, term, &listed); err != nil {
			return nil, fmt.Errorf("queue %s: read the children of finished jobs: %w", t.Name, err)
		}
		for _, v := range listed {
			if id, ok := v.(string); ok {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return t.ReadBlocked(ctx, slices.Compact(ids))
}

// AddChildren adds, to each parent of children (parent id → child ids), the ids of its
// children (docfmt.Children), for the worker that completes it.
func (t *Table) AddChildren(ctx context.Context, children map[string][]string) error {
	if len(children) == 0 {
		return nil
	}
	ids := make([]string, 0, len(children))
	m := make(map[string]any, len(children))
	for p, cs := range children {
		ids = append(ids, p)
		m[p] = cs
	}
	_, err := t.Write(ctx, r.Do(r.Expr(m), func(kids r.Term) any {
		return t.Term().GetAll(Anys(ids)...).Update(func(row r.Term) any {
			held := row.Field(docfmt.Children).Default([]any{})
			held = r.Branch(held.TypeOf().Eq("ARRAY"), held, []any{})
			return map[string]any{docfmt.Children: held.SetUnion(kids.Field(row.Field(docfmt.ID)))}
		})
	}))
	if err != nil {
		return fmt.Errorf("queue %s: record the children of parents: %w", t.Name, err)
	}
	return nil
}

// ReadBlocked returns those of the jobs ids that are blocked, with their parents.
func (t *Table) ReadBlocked(ctx context.Context, ids []string) ([]Blocked, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	term := t.Term().GetAll(Anys(ids)...).
		Filter(func(doc r.Term) r.Term { return doc.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)) }).
		Pluck(docfmt.ID, docfmt.DependsOn)
	var rows []map[string]any
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the children of finished jobs: %w", t.Name, err)
	}
	return blockedRows(rows), nil
}

// HasBlocked reports whether the table holds a blocked job (one read of the status
// index): whether a queue has workflows to look after.
func (t *Table) HasBlocked(ctx context.Context) (bool, error) {
	var n int
	if err := t.ReadOne(ctx, t.Term().GetAllByIndex(IndexStatus, string(job.Blocked)).Limit(1).Count(), &n); err != nil {
		return false, fmt.Errorf("queue %s: read whether jobs are blocked: %w", t.Name, err)
	}
	return n > 0, nil
}

// BlockedJobs returns up to n blocked jobs, through the status index, for a review.
func (t *Table) BlockedJobs(ctx context.Context, n int) ([]Blocked, error) {
	term := t.Term().GetAllByIndex(IndexStatus, string(job.Blocked)).Limit(n).Pluck(docfmt.ID, docfmt.DependsOn)
	var rows []map[string]any
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the blocked jobs: %w", t.Name, err)
	}
	return blockedRows(rows), nil
}

// Children reads up to n jobs, of any status, that have id among their parents, oldest
// first: those the job lists (docfmt.Children).
func (t *Table) Children(ctx context.Context, s Store, id string, n int) ([]*job.Job, error) {
	var listed []any
	term := t.Term().Get(id).Do(func(doc r.Term) any {
		kids := r.Branch(doc.Eq(nil), []any{}, doc.Field(docfmt.Children).Default([]any{}))
		return r.Branch(kids.TypeOf().Eq("ARRAY"), kids, []any{})
	})
	if err := t.ReadAll(ctx, term, &listed); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(listed))
	for _, v := range listed {
		if c, ok := v.(string); ok {
			ids = append(ids, c)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return t.ReadJobs(ctx, s, t.Term().GetAll(Anys(ids)...).OrderBy("dateCreated").Limit(n))
}

// Pending returns, for each of the blocked jobs, a parent in the table that has not
// completed, or "" when none has not, reading its parents only until it meets such a one:
// on a job with a thousand parents, each completion but the last reads a few, and the
// parent returned is the one to look at first next time. (A parent no longer in the
// table does not count: settling reads them all.) A job given no parents gets its own id.
func (t *Table) Pending(ctx context.Context, blocked []Blocked) (map[string]string, error) {
	out := make(map[string]string, len(blocked))
	if len(blocked) == 0 {
		return out, nil
	}
	terms := make(map[string]any, len(blocked))
	for _, b := range blocked {
		if len(b.Parents) == 0 {
			out[b.ID] = b.ID
			continue
		}
		terms[b.ID] = t.Term().GetAll(Anys(b.Parents)...).Filter(func(p r.Term) r.Term {
			return p.Field(docfmt.Status).Default(nil).Ne(string(job.Completed))
		}).Limit(1).Field(docfmt.ID).CoerceTo("array")
	}
	if len(terms) == 0 {
		return out, nil
	}
	var got map[string][]any
	if err := t.ReadOne(ctx, r.Expr(terms), &got); err != nil {
		return nil, fmt.Errorf("queue %s: read whether blocked jobs wait for more parents: %w", t.Name, err)
	}
	for id := range terms {
		out[id] = ""
		if list := got[id]; len(list) > 0 {
			p, _ := list[0].(string)
			out[id] = cmp.Or(p, id)
		}
	}
	return out, nil
}

// Completed returns those of the jobs ids that have completed.
func (t *Table) Completed(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var done []string
	term := t.Term().GetAll(Anys(ids)...).Filter(func(p r.Term) r.Term {
		return p.Field(docfmt.Status).Default(nil).Eq(string(job.Completed))
	}).Field(docfmt.ID)
	if err := t.ReadAll(ctx, term, &done); err != nil {
		return nil, fmt.Errorf("queue %s: read whether parents completed: %w", t.Name, err)
	}
	for _, id := range done {
		out[id] = true
	}
	return out, nil
}

// changedIDs is a write result reduced, on the server, to the ids of the documents it
// changed and its errors, so that the documents do not come back.
func changedIDs(res r.Term) any {
	return changesWhere(res, func(c r.Term) r.Term { return c.Field("new_val").Default(nil).Ne(nil) })
}

// changesWhere is a write result reduced to the ids of the changes keep keeps, and its
// errors.
func changesWhere(res r.Term, keep func(c r.Term) r.Term) any {
	return map[string]any{
		"ids": res.Field("changes").Default([]any{}).Filter(keep).
			Map(func(c r.Term) any { return c.Field("new_val").Field(docfmt.ID) }),
		"errors":      res.Field("errors"),
		"first_error": res.Field("first_error").Default(""),
	}
}

// writeIDs runs a write reduced by changedIDs and returns the ids.
func (t *Table) writeIDs(ctx context.Context, term r.Term, what string) ([]string, error) {
	var got struct {
		IDs []any `rethinkdb:"ids"`
		writeErrors
	}
	if err := t.writeReduced(ctx, term, what, &got, &got.writeErrors); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(got.IDs))
	for _, v := range got.IDs {
		if id, ok := v.(string); ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// writeErrors are the errors of a write reduced on the server (see changesWhere).
type writeErrors struct {
	Errors     int    `rethinkdb:"errors"`
	FirstError string `rethinkdb:"first_error"`
}

// writeReduced runs term, a write reduced on the server to got, whose errors are errs,
// and fails, saying what it did, when the write or one of its documents failed.
func (t *Table) writeReduced(ctx context.Context, term r.Term, what string, got any, errs *writeErrors) error {
	err := t.WriteOne(ctx, term, got)
	if err == nil && errs.Errors > 0 {
		err = fmt.Errorf("rethinkdb: %s", errs.FirstError)
	}
	if err != nil {
		return fmt.Errorf("queue %s: %s: %w", t.Name, what, err)
	}
	return nil
}
