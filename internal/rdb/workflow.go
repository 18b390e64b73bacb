package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Workflows (job.SetDependsOn): a job with parents is added job.Blocked, a status no
// claim reads (the claim indexes of both libraries hold waiting and failed jobs only).
// Release makes it waiting once every parent has completed, CancelBlocked cancels it
// when one will not; both are compare-and-sets on the blocked status, so a child is
// released or cancelled once, whoever sees its parents finish. IndexDependsOn finds a
// job's children.

// EnsureDependsOnIndex creates IndexDependsOn unless the table has it, and waits until it
// is built (on a table of a million jobs, about as long as building any index): every
// outcome of a parent reads it, so no job with parents may be added before.
func (t *Table) EnsureDependsOnIndex(ctx context.Context) error {
	if err := t.ensureIndex(ctx, IndexDependsOn); err != nil {
		return err
	}
	var status []any
	if err := t.ReadAll(ctx, t.Term().IndexWait(IndexDependsOn), &status); err != nil {
		return fmt.Errorf("queue %s: wait for the index %s: %w", t.Name, IndexDependsOn, err)
	}
	return nil
}

// Parent is a parent job as a child's release reads it: its status, and the completion
// log entry of its last completed run (nil when it has none), which the child carries.
type Parent struct {
	Status     job.Status     `rethinkdb:"status"`
	Completion map[string]any `rethinkdb:"completion"`
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
			"completion": r.Branch(done.Count().Gt(0), done.Nth(-1), nil)}
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

// BlockedChildren returns the blocked jobs that have one of parents among theirs.
func (t *Table) BlockedChildren(ctx context.Context, parents []string) ([]Blocked, error) {
	if len(parents) == 0 {
		return nil, nil
	}
	term := t.Term().GetAllByIndex(IndexDependsOn, Anys(parents)...).
		Filter(func(doc r.Term) r.Term { return doc.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)) }).
		Pluck(docfmt.ID, docfmt.DependsOn)
	var rows []map[string]any
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the blocked children of finished jobs: %w", t.Name, err)
	}
	return blockedRows(rows), nil
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
// first. A table without IndexDependsOn has none.
func (t *Table) Children(ctx context.Context, s Store, id string, n int) ([]*job.Job, error) {
	has, err := t.HasIndex(ctx, IndexDependsOn)
	if err != nil || !has {
		return nil, err
	}
	return t.ReadJobs(ctx, s, t.Term().GetAllByIndex(IndexDependsOn, id).Limit(n).OrderBy("dateCreated"))
}

// Release makes the blocked jobs ids waiting, at now, each carrying the completion
// entries of its parents (from parents), and returns those it released: a job no longer
// blocked is left alone.
func (t *Table) Release(ctx context.Context, ids []string, parents map[string]Parent, now time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	entries := make(map[string]any, len(parents))
	for id, p := range parents {
		if p.Completion != nil {
			entries[id] = p.Completion
		}
	}
	term := r.Do(r.Expr(entries), func(done r.Term) any {
		// A replace, not an update: the parents' results replace whatever the field held
		// (an update merges objects).
		return t.Term().GetAll(Anys(ids)...).Replace(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, job.MessageReleased, job.Waiting, true)
			results := row.Field(docfmt.DependsOn).Default([]any{}).Filter(func(p r.Term) r.Term {
				return p.TypeOf().Eq("STRING").And(done.HasFields(p))
			}).Map(func(p r.Term) any { return []any{p, done.Field(p)} }).CoerceTo("object")
			return r.Branch(row.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)), row.Without(docfmt.ParentResults).Merge(map[string]any{
				docfmt.Status:        string(job.Waiting),
				docfmt.DateEnable:    now,
				docfmt.ParentResults: results,
				docfmt.Log:           t.AppendLog(row.Field(docfmt.Log), entry, trunc),
				docfmt.QueueID:       t.QueueID,
			}), row)
		}, r.ReplaceOpts{ReturnChanges: true}).Do(changedIDs)
	})
	return t.writeIDs(ctx, term, "release blocked jobs")
}

// CancelBlocked cancels the blocked jobs of reasons (id → the reason, its log message) at
// now, and returns those it cancelled: a job no longer blocked is left alone.
func (t *Table) CancelBlocked(ctx context.Context, reasons map[string]string, now time.Time) ([]string, error) {
	if len(reasons) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(reasons))
	for id := range reasons {
		ids = append(ids, id)
	}
	term := r.Do(r.Expr(reasons), func(why r.Term) any {
		return t.Term().GetAll(Anys(ids)...).Update(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, "", job.Cancelled, true)
			entry = entry.Merge(map[string]any{"message": why.Field(row.Field(docfmt.ID))})
			return r.Branch(row.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)), map[string]any{
				docfmt.Status:       string(job.Cancelled),
				docfmt.DateFinished: now,
				docfmt.Log:          t.AppendLog(row.Field(docfmt.Log), entry, trunc),
				docfmt.QueueID:      t.QueueID,
			}, nil)
		}, r.UpdateOpts{ReturnChanges: true}).Do(changedIDs)
	})
	return t.writeIDs(ctx, term, "cancel blocked jobs")
}

// changedIDs is a write result reduced, on the server, to the ids of the documents it
// changed and its errors, so that the documents do not come back.
func changedIDs(res r.Term) any {
	return map[string]any{
		"ids": res.Field("changes").Default([]any{}).Filter(func(c r.Term) r.Term {
			return c.Field("new_val").Default(nil).Ne(nil)
		}).Map(func(c r.Term) any { return c.Field("new_val").Field(docfmt.ID) }),
		"errors":      res.Field("errors"),
		"first_error": res.Field("first_error").Default(""),
	}
}

// writeIDs runs a write reduced by changedIDs and returns the ids.
func (t *Table) writeIDs(ctx context.Context, term r.Term, what string) ([]string, error) {
	var got struct {
		IDs        []any  `rethinkdb:"ids"`
		Errors     int    `rethinkdb:"errors"`
		FirstError string `rethinkdb:"first_error"`
	}
	err := t.WriteOne(ctx, term, &got)
	if err == nil && got.Errors > 0 {
		err = fmt.Errorf("rethinkdb: %s", got.FirstError)
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: %s: %w", t.Name, what, err)
	}
	out := make([]string, 0, len(got.IDs))
	for _, v := range got.IDs {
		if id, ok := v.(string); ok {
			out = append(out, id)
		}
	}
	return out, nil
}
