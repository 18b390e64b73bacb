package rdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Start deadlines (job.SetDeadline): a waiting or failed job whose deadline has passed
// is cancelled, with the reason job.MessageDeadlinePassed, by whoever sees it first: a
// Queue Master through IndexDeadline every second (ExpireDue), or a producer that read it
// as a candidate (Expire). Each write is a compare-and-set on the job's status and
// deadline, so a job that started, finished or got a new deadline meanwhile is left
// alone, and a job is cancelled once whoever races.

// ErrNoDeadlineIndex is ExpireDue's answer on a table without IndexDeadline (no job with
// a deadline was added by a queue that could create it, it was dropped, or it was created
// a moment ago and the table's replicas do not have it yet).
var ErrNoDeadlineIndex = errors.New("the table has no index of start deadlines")

// ExpireDue cancels up to n jobs whose start deadline passed by now, through
// IndexDeadline, and returns their ids. An index still being built (a table adopted by
// this version) is not an error: nothing is expired here until it is ready, and workers
// still cancel such jobs when they read them. A missing index is ErrNoDeadlineIndex.
func (t *Table) ExpireDue(ctx context.Context, now time.Time, n int) ([]string, error) {
	due := t.Term().Between(r.MinVal, now, r.BetweenOpts{Index: IndexDeadline, RightBound: "closed"}).Limit(n)
	ids, err := t.expire(ctx, due, now)
	switch {
	case err == nil:
		return ids, nil
	case strings.Contains(err.Error(), "before its construction was finished"):
		return nil, nil
	case strings.Contains(err.Error(), "Index `"+IndexDeadline+"` was not found"):
		return nil, fmt.Errorf("queue %s: %w", t.Name, ErrNoDeadlineIndex)
	}
	return nil, err
}

// HasIndex reports whether the table's configuration lists the secondary index name,
// built or not.
func (t *Table) HasIndex(ctx context.Context, name string) (bool, error) {
	var names []string
	if err := t.ReadAll(ctx, t.Term().IndexList(), &names); err != nil {
		return false, fmt.Errorf("queue %s: list the table's indexes: %w", t.Name, err)
	}
	return slices.Contains(names, name), nil
}

// EnsureDeadlineIndex creates IndexDeadline unless the table has it, and does not wait for
// it to be built. An index that another queue created first is not an error.
func (t *Table) EnsureDeadlineIndex(ctx context.Context) error {
	return t.ensureIndex(ctx, IndexDeadline)
}

// ensureIndex creates the index name (one of IndexFunc's) unless the table has it, and
// does not wait for it to be built. An index that another queue created first is not an
// error.
func (t *Table) ensureIndex(ctx context.Context, name string) error {
	has, err := t.HasIndex(ctx, name)
	if err != nil || has {
		return err
	}
	_, err = t.Write(ctx, t.Term().IndexCreateFunc(name, IndexFunc(name)))
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// Expire cancels those of the jobs ids whose start deadline passed by now, and returns
// them: candidates a claim read, which it must not run.
func (t *Table) Expire(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return t.expire(ctx, t.Term().GetAll(Anys(ids)...), now)
}

func (t *Table) expire(ctx context.Context, jobs r.Term, now time.Time) ([]string, error) {
	res, err := t.Write(ctx, jobs.Update(func(row r.Term) any {
		deadline := row.Field(docfmt.Deadline).Default(nil)
		status := row.Field(docfmt.Status).Default("")
		passed := status.Eq(string(job.Waiting)).Or(status.Eq(string(job.Failed))).
			And(deadline.TypeOf().Eq("PTYPE<TIME>")).And(deadline.Le(now))
		entry, trunc := t.rowLog(row, now, job.MessageDeadlinePassed, job.Cancelled, true)
		return r.Branch(passed, map[string]any{
			docfmt.Status:       string(job.Cancelled),
			docfmt.DateFinished: now,
			docfmt.Log:          t.AppendLog(row.Field(docfmt.Log), entry, trunc),
			docfmt.QueueID:      t.QueueID,
		}, nil)
	}, r.UpdateOpts{ReturnChanges: true}))
	if err != nil {
		return nil, fmt.Errorf("queue %s: cancel jobs past their deadline: %w", t.Name, err)
	}
	var ids []string
	for _, c := range res.Changes {
		if doc, ok := c.NewValue.(map[string]any); ok && doc[docfmt.Status] == string(job.Cancelled) {
			id, _ := doc[docfmt.ID].(string)
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Passed reports whether j's start deadline has passed at now.
func Passed(j *job.Job, now time.Time) bool {
	d := j.Deadline()
	return !d.IsZero() && !d.After(now)
}
