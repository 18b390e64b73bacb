package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The cancels that flow down a workflow (see Workflows in workflow.go): what a job that
// will never complete lists, read before a write that may remove it, and the cancel of
// its blocked descendants, each with its reason.

// Listed is what a job lists for a write that may remove it: its name and its children.
type Listed struct {
	Name     string
	Children []string
}

// ListedChildren returns, by job, the names of those of the jobs ids in the table and the
// children they list (docfmt.Children), for a write that may remove the jobs.
func (t *Table) ListedChildren(ctx context.Context, ids []string) (map[string]Listed, error) {
	out := make(map[string]Listed)
	if len(ids) == 0 {
		return out, nil
	}
	var rows []map[string]any
	if err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Pluck(docfmt.ID, docfmt.Name, docfmt.Children), &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the children of jobs: %w", t.Name, err)
	}
	for _, row := range rows {
		id, _ := row[docfmt.ID].(string)
		if id == "" {
			continue
		}
		l := Listed{}
		l.Name, _ = row[docfmt.Name].(string)
		list, _ := row[docfmt.Children].([]any)
		for _, v := range list {
			if c, ok := v.(string); ok {
				l.Children = append(l.Children, c)
			}
		}
		out[id] = l
	}
	return out, nil
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
