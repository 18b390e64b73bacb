package rdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A claim is a read that picks the Candidates, and the write that switches them to active
// (together with the outcomes waiting to be written, see commit.go).
//
// What a claim costs on a real RethinkDB is its index range reads and its write, not its
// round trips (shared/notes/rethinkdb-facts.md), and an ordered range read costs more the
// more entries it returns, far more when its result is taken into a larger query as an
// array (measured on RethinkDB 2.4.4: limit 1, 1.5 ms; limit 50, 9 ms streamed and 31 ms as
// an array). So:
//
//   - The Candidates are read through IndexClaim, whose keys never tie, so a range
//     read stops at what it takes however many jobs were added in the same millisecond.
//   - The common case is one streamed range read: the head of the whole index in priority
//     order, at most headSize entries, filtered to the due jobs and cut at the free slots.
//   - Only when that comes back short (fewer due jobs than free slots; the queue is not
//     saturated), and the index holds more than the head gave (one unordered read of a
//     few entries tells), does the queue read each priority's range, the six at once: due jobs
//     come first in a priority's range, so this finds the due jobs that not-due jobs of a
//     higher priority hid from the head (a delayed job of high priority never holds back
//     due jobs: the original's issue #83), and, from the first job after them, when the
//     next delayed job falls due.
//   - The reads run in readMode "outdated": they only propose Candidates, read whole and
//     checked here with this library's own reading rules (claimable). The write runs on
//     the primary with the queue's own run options and is a compare-and-set: it switches a
//     job to active only if its status, processCount and retryCount are still what was
//     read and it is still due, so a stale candidate, or one claimed or changed elsewhere
//     since, is merely not claimed; nothing is claimed twice.

// priorities in processing order.
var priorities = []job.Priority{job.Highest, job.High, job.Medium, job.Normal, job.Low, job.Lowest}

// headSize is how many entries of the index head a claim of n reads at most.
func headSize(n int) int { return n + 32 }

// readTable is the queue's table for reads that only propose Candidates.
func (t *Table) readTable() r.Term {
	return r.DB(t.DB).Table(t.Name, r.TableOpts{ReadMode: "outdated"})
}

// claimRange is the claim index between [p, from] and [p, to] (for every priority when p
// is zero), in index order.
func (t *Table) claimRange(lo, hi []any) r.Term {
	idx := IndexClaim
	return t.readTable().Between(lo, hi, r.BetweenOpts{Index: idx, RightBound: "closed"}).OrderBy(r.OrderByOpts{Index: idx})
}

// Skip is what a claim leaves out: documents by id (those it cannot process), and jobs by
// name (held back by a rate limit or a time window, see Limit).
type Skip struct {
	IDs, Names []string
}

// notSkipped leaves out the documents of skip.
func notSkipped(skip Skip) func(doc r.Term) r.Term {
	ids, names := r.Expr(skip.IDs), r.Expr(skip.Names)
	return func(doc r.Term) r.Term {
		keep := ids.Contains(doc.Field("id")).Not()
		if len(skip.Names) > 0 {
			keep = keep.And(names.Contains(doc.Field("name").Default(nil)).Not())
		}
		return keep
	}
}

// isDue is true for a document whose dateEnable is a time that has come.
func isDue(doc r.Term) r.Term {
	return doc.Field("dateEnable").TypeOf().Eq("PTYPE<TIME>").And(doc.Field("dateEnable").Le(r.Now()))
}

// headTerm reads up to n due jobs among the first headSize(n) of the index.
func (t *Table) headTerm(n int, skip Skip) r.Term {
	lo := []any{int(job.Highest), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(job.Lowest), r.MaxVal, r.MaxVal, r.MaxVal}
	keep := notSkipped(skip)
	return t.claimRange(lo, hi).Limit(headSize(n)).Filter(func(doc r.Term) r.Term {
		return isDue(doc).And(keep(doc))
	}).Limit(n)
}

// entry is one job of a priority's range, as priorityTerm reads it: the document when it
// is due, when it falls due otherwise.
type entry struct {
	Doc map[string]any `rethinkdb:"doc"`
	Due bool           `rethinkdb:"due"`
	At  time.Time      `rethinkdb:"at"`
}

// priorityTerm reads the first n+1 jobs of priority p's range: its due jobs come first,
// then the ones not due yet in the order they fall due.
func (t *Table) priorityTerm(p job.Priority, n int, skip Skip) r.Term {
	lo := []any{int(p), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(p), r.MaxVal, r.MaxVal, r.MaxVal}
	return t.claimRange(lo, hi).Filter(notSkipped(skip)).Limit(n + 1).Map(func(doc r.Term) any {
		due := isDue(doc)
		return map[string]any{"doc": r.Branch(due, doc, nil), "due": due, "at": doc.Field("dateEnable")}
	})
}

// Candidates is what the candidate read found.
type Candidates struct {
	// Docs are the due jobs to claim, in processing order, as they were read.
	Docs []map[string]any
	// NextDue is when the earliest job that is not due yet falls due; zero when there is
	// none or the read did not look (it filled every slot from the head).
	NextDue time.Time
}

// ReadCandidates reads up to n due jobs to claim (see the top of this file).
func (t *Table) ReadCandidates(ctx context.Context, n int, skip Skip) (Candidates, error) {
	var c Candidates
	if err := t.ReadAll(ctx, t.headTerm(n, skip), &c.Docs); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	if len(c.Docs) == n {
		return c, nil
	}
	// Short: when the index holds nothing but what the head gave, there is no due job a
	// delayed one hides and no delayed job to wait for, and one unordered read of a few
	// entries says so; an idle queue spares the six reads below at every claim.
	var more int
	lo := []any{int(job.Highest), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(job.Lowest), r.MaxVal, r.MaxVal, r.MaxVal}
	rest := t.readTable().Between(lo, hi, r.BetweenOpts{Index: IndexClaim, RightBound: "closed"}).
		Filter(notSkipped(skip)).Limit(len(c.Docs) + 1).Count()
	if err := t.ReadOne(ctx, rest, &more); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	if more <= len(c.Docs) {
		return c, nil
	}
	ranges := make([][]entry, len(priorities))
	errs := make([]error, len(priorities))
	var wg sync.WaitGroup
	for i, p := range priorities {
		wg.Go(func() { errs[i] = t.ReadAll(ctx, t.priorityTerm(p, n, skip), &ranges[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	c.Docs = c.Docs[:0]
	for _, rng := range ranges {
		for _, e := range rng {
			switch {
			case e.Due && e.Doc != nil && len(c.Docs) < n:
				c.Docs = append(c.Docs, e.Doc)
			case !e.Due && !e.At.IsZero() && (c.NextDue.IsZero() || e.At.Before(c.NextDue)):
				c.NextDue = e.At
			}
		}
	}
	return c, nil
}

// Claimable reads a candidate as a job, or says why it cannot be processed: every field
// this library reads must have a type it can read (FromDocument), and the counters and
// durations the claim and the outcome compute with must be there. A document that fails
// (written by hand or by another tool) is never claimed, so it cannot block the jobs
// behind it.
func Claimable(s Store, doc map[string]any) (*job.Job, error) {
	for _, f := range []string{"priority", "timeout", "retryDelay", "retryCount", "retryMax", "processCount"} {
		if _, ok := doc[f].(float64); !ok {
			return nil, fmt.Errorf("%w: field %q is %T %v, not a number", job.ErrInvalidDocument, f, doc[f], doc[f])
		}
	}
	if _, ok := doc["log"].([]any); !ok {
		return nil, fmt.Errorf("%w: field \"log\" is %T, not an array", job.ErrInvalidDocument, doc["log"])
	}
	return FromDocument(s, doc)
}

// ClaimSpec is what the write needs to claim one candidate: the values it was read with,
// which the write compares before it sets anything (so a job claimed, changed or
// cancelled by anyone since is left alone), and the fields it then sets, with leaseEnd
// as the job's dateEnable (see LeaseEnd).
func (t *Table) ClaimSpec(j *job.Job, now, leaseEnd time.Time) map[string]any {
	claimed := *j
	entry := WithoutData(NewLog(&claimed, t.QueueID, nil, job.MessageActive, job.Information, job.Active))
	entry.Date = now
	return map[string]any{
		"claim":  true,
		"status": string(j.Status),
		"pc":     j.ProcessCount,
		"rc":     j.RetryCount,
		"set": map[string]any{
			"status":       string(job.Active),
			"dateStarted":  now,
			"dateEnable":   leaseEnd,
			"queueId":      t.QueueID,
			"processCount": j.ProcessCount + 1,
		},
		"entry": LogDocument(entry),
		"trunc": LogDocument(TruncatedLog(&claimed, t.QueueID, t.LimitJobLogs, job.Active)),
	}
}

// claimUpdate applies the claim spec c (an object term of commitTerm) to row: only if the
// job is as it was read (same status, processCount and retryCount: nobody claimed, failed
// or reanimated it since) and still due by the server's clock, it becomes active, with
// the log entry "Job retrieved and active" and dateEnable moved to the end of its lease
// (see LeaseEnd). Times are not compared for equality: one written by another client
// need not come back bit for bit after a round trip through this driver's encoding, and
// such a claim would never match (measured with jobs the Node.js library added).
func (t *Table) claimUpdate(row, c r.Term) r.Term {
	unchanged := row.Field("status").Default(nil).Eq(c.Field("status")).
		And(row.Field("processCount").Default(nil).Eq(c.Field("pc"))).
		And(row.Field("retryCount").Default(nil).Eq(c.Field("rc"))).
		And(row.Field("dateEnable").Default(nil).Le(r.Now()))
	return r.Branch(unchanged, c.Field("set").Merge(map[string]any{
		"log": t.AppendLog(row.Field("log"), c.Field("entry"), c.Field("trunc")),
	}), nil)
}

// ClaimKey is a claimed job's place in the index before the claim, for processing order.
type ClaimKey struct {
	Priority    float64   `rethinkdb:"priority"`
	DateEnable  time.Time `rethinkdb:"dateEnable"`
	DateCreated time.Time `rethinkdb:"dateCreated"`
}

func (a ClaimKey) compare(b ClaimKey) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority),
		a.DateEnable.Compare(b.DateEnable),
		a.DateCreated.Compare(b.DateCreated))
}

// SortClaimed orders claimed jobs as the index did.
func SortClaimed(jobs []*job.Job, keys map[string]ClaimKey) {
	slices.SortStableFunc(jobs, func(a, b *job.Job) int { return keys[a.ID].compare(keys[b.ID]) })
}
