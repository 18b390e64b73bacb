package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A claim is a read that picks the candidates, and the write that switches them to active
// (together with the outcomes waiting to be written, see commit.go).
//
// What a claim costs on a real RethinkDB is its index range reads and its write, not its
// round trips (shared/notes/rethinkdb-facts.md), and an ordered range read costs more the
// more entries it returns, far more when its result is taken into a larger query as an
// array (measured on RethinkDB 2.4.4: limit 1, 1.5 ms; limit 50, 9 ms streamed and 31 ms as
// an array). So:
//
//   - The candidates are read through dbinit.IndexClaim, whose keys never tie, so a range
//     read stops at what it takes however many jobs were added in the same millisecond.
//   - The common case is one streamed range read: the head of the whole index in priority
//     order, at most headSize entries, filtered to the due jobs and cut at the free slots.
//   - Only when that comes back short (fewer due jobs than free slots; the queue is not
//     saturated) does the queue read each priority's range, the six at once: due jobs
//     come first in a priority's range, so this finds the due jobs that not-due jobs of a
//     higher priority hid from the head (a delayed job of high priority never holds back
//     due jobs: the original's issue #83), and, from the first job after them, when the
//     next delayed job falls due.
//   - The reads run in readMode "outdated": they only propose candidates. The write runs
//     on the primary with the queue's own run options and switches a job to active only if
//     it is still waiting or failed, due and well formed, so a stale candidate is merely
//     not claimed; nothing is claimed twice.

// priorities in processing order.
var priorities = []job.Priority{job.Highest, job.High, job.Medium, job.Normal, job.Low, job.Lowest}

// headSize is how many entries of the index head a claim of n reads at most.
func headSize(n int) int { return n + 32 }

// readTable is the queue's table for reads that only propose candidates.
func (q *Queue) readTable() r.Term {
	return r.DB(q.cfg.db).Table(q.cfg.name, r.TableOpts{ReadMode: "outdated"})
}

// claimRange is the claim index between [p, from] and [p, to] (for every priority when p
// is zero), in index order.
func (q *Queue) claimRange(lo, hi []any) r.Term {
	idx := dbinit.IndexClaim
	return q.readTable().Between(lo, hi, r.BetweenOpts{Index: idx, RightBound: "closed"}).OrderBy(r.OrderByOpts{Index: idx})
}

// notSkipped leaves out the documents of skip.
func notSkipped(skip []string) func(doc r.Term) r.Term {
	skipped := r.Expr(skip)
	return func(doc r.Term) r.Term { return skipped.Contains(doc.Field("id")).Not() }
}

// isDue is true for a document whose dateEnable is a time that has come.
func isDue(doc r.Term) r.Term {
	return doc.Field("dateEnable").TypeOf().Eq("PTYPE<TIME>").And(doc.Field("dateEnable").Le(r.Now()))
}

// headTerm reads the ids of up to n due jobs among the first headSize(n) of the index.
func (q *Queue) headTerm(n int, skip []string) r.Term {
	lo := []any{int(job.Highest), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(job.Lowest), r.MaxVal, r.MaxVal, r.MaxVal}
	keep := notSkipped(skip)
	return q.claimRange(lo, hi).Limit(headSize(n)).Filter(func(doc r.Term) r.Term {
		return isDue(doc).And(keep(doc))
	}).Limit(n).Field("id")
}

// entry is one job of a priority's range, as priorityTerm reads it.
type entry struct {
	ID  string    `rethinkdb:"id"`
	Due bool      `rethinkdb:"due"`
	At  time.Time `rethinkdb:"at"`
}

// priorityTerm reads the first n+1 jobs of priority p's range: its due jobs come first,
// then the ones not due yet in the order they fall due.
func (q *Queue) priorityTerm(p job.Priority, n int, skip []string) r.Term {
	lo := []any{int(p), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(p), r.MaxVal, r.MaxVal, r.MaxVal}
	return q.claimRange(lo, hi).Filter(notSkipped(skip)).Limit(n + 1).Map(func(doc r.Term) any {
		return map[string]any{"id": doc.Field("id"), "due": isDue(doc), "at": doc.Field("dateEnable")}
	})
}

// candidates is what the candidate read found.
type candidates struct {
	// IDs are the due jobs to claim, in processing order.
	IDs []string
	// NextDue is when the earliest job that is not due yet falls due; zero when there is
	// none or the read did not look (it filled every slot from the head).
	NextDue time.Time
}

// readCandidates reads up to n due jobs to claim (see the top of this file).
func (q *Queue) readCandidates(ctx context.Context, n int, skip []string) (candidates, error) {
	var c candidates
	if err := q.readAll(ctx, q.headTerm(n, skip), &c.IDs); err != nil {
		return candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", q.cfg.name, err)
	}
	if len(c.IDs) == n {
		return c, nil
	}
	ranges := make([][]entry, len(priorities))
	errs := make([]error, len(priorities))
	var wg sync.WaitGroup
	for i, p := range priorities {
		wg.Go(func() { errs[i] = q.readAll(ctx, q.priorityTerm(p, n, skip), &ranges[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", q.cfg.name, err)
	}
	c.IDs = c.IDs[:0]
	for _, rng := range ranges {
		for _, e := range rng {
			switch {
			case e.Due && len(c.IDs) < n:
				c.IDs = append(c.IDs, e.ID)
			case !e.Due && !e.At.IsZero() && (c.NextDue.IsZero() || e.At.Before(c.NextDue)):
				c.NextDue = e.At
			}
		}
	}
	return c, nil
}

// wellFormed is true when a job document has every field the claim and the outcome writes
// use, of the type they need, and every field this library reads, of a type it can read.
// A document that fails it (written by hand or by another tool) is never claimed, so it
// cannot fail a claim's write or block the jobs behind it.
func wellFormed(doc r.Term) r.Term {
	typeIn := func(field string, types ...string) r.Term {
		return r.Expr(types).Contains(doc.Field(field).Default(nil).TypeOf())
	}
	const num, null, tm = "NUMBER", "NULL", "PTYPE<TIME>"
	return r.And(
		typeIn("timeout", num), typeIn("retryDelay", num), typeIn("retryCount", num), typeIn("processCount", num),
		typeIn("retryMax", num, null), typeIn("repeatDelay", num, null), typeIn("progress", num, null),
		typeIn("priority", num), typeIn("repeat", "BOOL", num, null),
		typeIn("name", "STRING", null), typeIn("queueId", "STRING", null),
		typeIn("dateCreated", tm), typeIn("dateEnable", tm), typeIn("dateStarted", tm, null), typeIn("dateFinished", tm, null),
		typeIn("log", "ARRAY"),
		doc.Field("log").Default([]any{}).Filter(func(e r.Term) r.Term { return e.TypeOf().Ne("OBJECT") }).IsEmpty(),
	)
}

// claimUpdate switches one due, well-formed job to active: dateStarted now, processCount
// + 1, this queue's id, "Job retrieved and active" in the log, and dateEnable moved to the
// end of its lease, when the Master's review may take the run for a crashed one: now +
// timeout + retryDelay × retryCount. Anything else is left as it is: a job claimed
// elsewhere meanwhile, or a document that is not well formed.
func (q *Queue) claimUpdate(row r.Term) r.Term {
	status := row.Field("status")
	due := status.Eq(string(job.Waiting)).Or(status.Eq(string(job.Failed))).And(row.Field("dateEnable").Le(r.Now()))
	entry, trunc := q.rowLog(row, r.Now(), job.MessageActive, job.Active)
	return r.Branch(due.And(wellFormed(row)), map[string]any{
		"status":       string(job.Active),
		"dateStarted":  r.Now(),
		"dateEnable":   q.leaseEnd(row),
		"queueId":      q.id,
		"processCount": row.Field("processCount").Add(1),
		"log":          q.appendLog(row.Field("log"), entry, trunc),
	}, nil)
}

// leaseEnd is when a run of the job row that starts now may be taken for a crashed one.
func (q *Queue) leaseEnd(row r.Term) r.Term {
	return r.Now().Add(row.Field("timeout").Div(1000)).Add(row.Field("retryDelay").Div(1000).Mul(row.Field("retryCount")))
}

// claimKey is a claimed job's place in the index before the claim, for processing order.
type claimKey struct {
	Priority    float64   `rethinkdb:"priority"`
	DateEnable  time.Time `rethinkdb:"dateEnable"`
	DateCreated time.Time `rethinkdb:"dateCreated"`
}

func (a claimKey) compare(b claimKey) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority),
		a.DateEnable.Compare(b.DateEnable),
		a.DateCreated.Compare(b.DateCreated))
}

// sortClaimed orders claimed jobs as the index did.
func sortClaimed(jobs []*job.Job, keys map[string]claimKey) {
	slices.SortStableFunc(jobs, func(a, b *job.Job) int { return keys[a.ID].compare(keys[b.ID]) })
}
