// Package listing reads pages of a queue's jobs for the operator tools (rjq list and the
// dashboard's job list), whatever the documents hold.
package listing

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Job is a job as a list shows it.
type Job struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`
	Priority    float64   `json:"priority"`
	Progress    float64   `json:"progress"`
	DateCreated time.Time `json:"dateCreated"`
	// Group and Sequence are the job's group (job.SetGroup) and sequence
	// (job.SetSequence); "" for none.
	Group    string `json:"group"`
	Sequence string `json:"sequence"`
}

// listFields are the fields of a job a list shows.
var listFields = []any{"id", "name", "status", "priority", "progress", "dateCreated", docfmt.Group, docfmt.Sequence}

// Page reads up to limit jobs of table in id order after the id after (all from the
// start when after is empty), of the given status and name when they are not empty,
// through the primary index: the read stops at the page's end, never scanning the whole
// table. An empty page is an empty slice, which encodes as [].
func Page(ctx context.Context, s r.QueryExecutor, table r.Term, status, name, after string, limit int) ([]Job, error) {
	page := table.Between(r.MinVal, r.MaxVal, r.BetweenOpts{Index: "id"})
	if after != "" {
		page = table.Between(after, r.MaxVal, r.BetweenOpts{Index: "id", LeftBound: "open"})
	}
	page = page.OrderBy(r.OrderByOpts{Index: "id"}).Filter(func(d r.Term) r.Term {
		keep := d.HasFields("status").And(d.Field("id").Ne(job.StateDocumentID))
		if status != "" {
			keep = keep.And(d.Field("status").Eq(status))
		}
		if name != "" {
			keep = keep.And(d.Field("name").Eq(name))
		}
		return keep
	}).Limit(limit).Pluck(listFields...)
	cur, err := page.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return nil, err
	}
	// Rows are read as maps and each field taken for what it is: a document written by
	// hand with a field of another type must not fail the page.
	var rows []map[string]any
	if err := cur.All(&rows); err != nil {
		return nil, err
	}
	jobs := make([]Job, len(rows))
	for i, row := range rows {
		jobs[i] = From(row)
	}
	return jobs, nil
}

// From is a row of a page as a list shows it: a field of another type than a job's is
// shown as text (id, name, status) or left zero (a number, a time).
func From(row map[string]any) Job {
	text := func(k string) string {
		if v, ok := row[k].(string); ok || row[k] == nil {
			return v
		}
		return fmt.Sprint(row[k])
	}
	number := func(k string) float64 {
		n, _ := row[k].(float64)
		return n
	}
	created, _ := row["dateCreated"].(time.Time)
	return Job{ID: text("id"), Name: text("name"), Status: text("status"),
		Priority: number("priority"), Progress: number("progress"), DateCreated: created,
		Group: text(docfmt.Group), Sequence: text(docfmt.Sequence)}
}
