package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// priorities in processing order.
var priorities = []job.Priority{job.Highest, job.High, job.Medium, job.Normal, job.Low, job.Lowest}

// claimResult is what one claim query did.
type claimResult struct {
	// Candidates is how many due jobs the query found; more than it claimed means other
	// queues took some first, and there may be more to claim.
	Candidates int `rethinkdb:"candidates"`
	// Claim is the update's response, with the claimed jobs as changes.
	Claim writeResult `rethinkdb:"claim"`
	// NextIn is the wait, in seconds by the server's clock, until the earliest waiting or
	// failed job that is not due yet becomes due; nil when there is none or the query did
	// not look because it filled every slot.
	NextIn *float64 `rethinkdb:"nextIn"`
}

// claimTerm claims up to n due jobs in one query.
//
// The original took the first n jobs of the index and then dropped those not yet due, so
// one delayed job of high priority kept every due job behind it waiting (its issue #83).
// Here each priority's due jobs are read as their own index range, [p, -∞, -∞] to
// [p, now, +∞], and the ranges are joined in priority order: a job that is not due is
// never read. Each range costs O(n) on real RethinkDB when index keys are distinct.
//
// The jobs found are switched to active by a conditional update, so a job another queue
// claimed in between is left alone, and only the jobs this query changed come back.
func (q *Queue) claimTerm(n int) r.Term {
	idx := dbinit.IndexInactivePriorityDateCreated
	due := make([]any, len(priorities))
	next := make([]any, len(priorities))
	for i, p := range priorities {
		due[i] = q.table().Between([]any{int(p), r.MinVal, r.MinVal}, []any{int(p), r.Now(), r.MaxVal}, r.BetweenOpts{Index: idx}).
			OrderBy(r.OrderByOpts{Index: idx}).Limit(n).Field("id").CoerceTo("array")
		next[i] = q.table().Between([]any{int(p), r.Now(), r.MinVal}, []any{int(p), r.MaxVal, r.MaxVal}, r.BetweenOpts{Index: idx}).
			OrderBy(r.OrderByOpts{Index: idx}).Limit(1).Field("dateEnable").CoerceTo("array")
	}
	return r.Expr(due).ConcatMap(func(ids r.Term) r.Term { return ids }).Limit(n).Do(func(ids r.Term) r.Term {
		soonest := r.Expr(next).ConcatMap(func(d r.Term) r.Term { return d })
		return r.Expr(map[string]any{
			"candidates": ids.Count(),
			"claim": r.Branch(ids.IsEmpty(), map[string]any{},
				q.table().GetAll(r.Args(ids)).Update(q.claimUpdate, r.UpdateOpts{ReturnChanges: true})),
			"nextIn": r.Branch(ids.Count().Lt(n).And(soonest.IsEmpty().Not()), soonest.Min().Sub(r.Now()), nil),
		})
	})
}

// claimUpdate switches one due job to active: dateStarted now, processCount + 1, this
// queue's id, "Job retrieved and active" in the log, and dateEnable moved to when the
// Master's review may take the run for a crashed one: now + timeout + retryDelay ×
// retryCount. A job that is no longer due (claimed elsewhere meanwhile) is left as it is.
func (q *Queue) claimUpdate(row r.Term) any {
	status := row.Field("status")
	due := status.Eq(string(job.Waiting)).Or(status.Eq(string(job.Failed))).And(row.Field("dateEnable").Le(r.Now()))
	entry, trunc := q.rowLog(row, r.Now(), job.MessageActive, job.Active)
	return r.Branch(due, map[string]any{
		"status":       string(job.Active),
		"dateStarted":  r.Now(),
		"dateEnable":   r.Now().Add(row.Field("timeout").Div(1000)).Add(row.Field("retryDelay").Div(1000).Mul(row.Field("retryCount"))),
		"queueId":      q.id,
		"processCount": row.Field("processCount").Add(1),
		"log":          q.appendLog(row.Field("log"), entry, trunc),
	}, nil)
}

// claimed is what one claim got.
type claimed struct {
	// jobs are the claimed jobs in processing order.
	jobs []*job.Job
	// candidates is how many due jobs the query found.
	candidates int
	// nextIn is when the next delayed job falls due; zero when unknown.
	nextIn time.Duration
	// unreadable reports due documents the claim could not switch to active, or switched
	// but cannot read as jobs (those stay active for the Master's review); the others run.
	unreadable error
}

// claim runs the claim query.
func (q *Queue) claim(ctx context.Context, n int) (claimed, error) {
	var res claimResult
	if err := q.readOne(ctx, q.claimTerm(n), &res); err != nil {
		return claimed{}, fmt.Errorf("queue %s: claim jobs: %w", q.cfg.name, err)
	}
	c := claimed{candidates: res.Candidates}
	var unreadable []error
	if res.Claim.Errors > 0 {
		unreadable = append(unreadable, fmt.Errorf("rethinkdb: %s", res.Claim.FirstError))
	}
	type entry struct {
		j   *job.Job
		key job.Job // the job before the claim, for its place in the index
	}
	list := make([]entry, 0, len(res.Claim.Changes))
	for _, ch := range res.Claim.Changes {
		newDoc, _ := ch.NewValue.(map[string]any)
		oldDoc, _ := ch.OldValue.(map[string]any)
		j, err := job.FromDocument(q.store(), newDoc)
		if err == nil {
			var before *job.Job
			if before, err = job.FromDocument(nil, oldDoc); err == nil {
				list = append(list, entry{j, *before})
				continue
			}
		}
		unreadable = append(unreadable, err)
	}
	slices.SortFunc(list, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.key.Priority, b.key.Priority),
			a.key.DateEnable.Compare(b.key.DateEnable),
			a.key.DateCreated.Compare(b.key.DateCreated))
	})
	c.jobs = make([]*job.Job, len(list))
	for i, e := range list {
		c.jobs[i] = e.j
	}
	if res.NextIn != nil {
		c.nextIn = max(time.Duration(*res.NextIn*float64(time.Second)), time.Millisecond)
	}
	if len(unreadable) > 0 {
		c.unreadable = fmt.Errorf("queue %s: claim jobs: %w", q.cfg.name, errors.Join(unreadable...))
	}
	return c, nil
}
