package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A claim is two queries: a read that picks the candidates, and the write that switches
// them to active (together with the outcomes waiting to be written, see commit.go).
//
// What a claim costs on a real RethinkDB is its index range reads (about 2 ms each in
// readMode majority, 0.7 ms in outdated, even when empty) and its write's flush, not its
// round trips (shared/notes/rethinkdb-facts.md). So:
//
//   - The candidates are read through dbinit.IndexClaim, whose keys never tie, so a range
//     read stops at what it takes however many jobs were added in the same millisecond.
//   - The common case is one range read: the head of the whole index, in priority order,
//     headSize entries long, filtered to the due jobs. Only when that head holds fewer due
//     jobs than there are free slots while more jobs lie beyond it (many delayed jobs of
//     a higher priority, say) does the read go on, one priority's due range at a time
//     ([p, -∞] to [p, now]), stopping as soon as the slots are filled. A delayed job of
//     high priority therefore never holds back due jobs (the original's issue #83), and
//     a claim reads at most 1 + 6 ranges.
//   - The read runs in readMode "outdated": it only proposes candidates. The write runs
//     on the primary with the queue's own run options and switches a job to active only
//     if it is still waiting or failed, due and well formed, so a stale candidate is
//     merely not claimed; nothing is claimed twice.

// priorities in processing order.
var priorities = []job.Priority{job.Highest, job.High, job.Medium, job.Normal, job.Low, job.Lowest}

// headSize is how many entries of the index head a claim of n reads at first.
func headSize(n int) int { return 2*n + 16 }

// candidates is what the candidate read found.
type candidates struct {
	IDs []string `rethinkdb:"ids"`
	// NextDue is when the earliest waiting or failed job that is not due yet falls due,
	// when the head held the whole index; nil otherwise.
	NextDue *time.Time `rethinkdb:"nextDue"`
	// Whole reports that the head held the whole index, so NextDue is known.
	Whole bool `rethinkdb:"whole"`
}

// readTable is the queue's table for reads that only propose candidates.
func (q *Queue) readTable() r.Term {
	return r.DB(q.cfg.db).Table(q.cfg.name, r.TableOpts{ReadMode: "outdated"})
}

// candidateTerm reads up to n due jobs' ids in processing order, leaving out skip.
func (q *Queue) candidateTerm(n int, skip []string) r.Term {
	idx := dbinit.IndexClaim
	skipped := r.Expr(skip)
	usable := func(doc r.Term) r.Term {
		return doc.Field("dateEnable").TypeOf().Eq("PTYPE<TIME>").
			And(doc.Field("dateEnable").Le(r.Now())).
			And(skipped.Contains(doc.Field("id")).Not())
	}
	lo := []any{int(job.Highest), r.MinVal, r.MinVal, r.MinVal}
	hi := []any{int(job.Lowest), r.MaxVal, r.MaxVal, r.MaxVal}
	size := headSize(n)
	head := q.readTable().Between(lo, hi, r.BetweenOpts{Index: idx, RightBound: "closed"}).
		OrderBy(r.OrderByOpts{Index: idx}).Limit(size).CoerceTo("array")
	return head.Do(func(h r.Term) r.Term {
		due := h.Filter(usable).Limit(n).Field("id").CoerceTo("array")
		whole := h.Count().Lt(size)
		later := h.Filter(func(doc r.Term) r.Term {
			return doc.Field("dateEnable").TypeOf().Eq("PTYPE<TIME>").And(doc.Field("dateEnable").Gt(r.Now()))
		}).Field("dateEnable")
		return r.Expr(map[string]any{
			"ids":     r.Branch(whole.Or(due.Count().Eq(n)), due, q.byPriority(0, r.Expr(n), usable)),
			"whole":   whole,
			"nextDue": r.Branch(whole.And(later.IsEmpty().Not()), later.Min(), nil),
		})
	})
}

// byPriority reads the due jobs of priorities[i:], one priority's range at a time, until
// n are found; each range is read only if the ones before it fell short.
func (q *Queue) byPriority(i int, n r.Term, usable func(r.Term) r.Term) r.Term {
	if i == len(priorities) {
		return r.Expr([]any{})
	}
	idx := dbinit.IndexClaim
	p := int(priorities[i])
	due := q.readTable().Between([]any{p, r.MinVal, r.MinVal, r.MinVal}, []any{p, r.Now(), r.MaxVal, r.MaxVal}, r.BetweenOpts{Index: idx}).
		OrderBy(r.OrderByOpts{Index: idx}).Filter(usable).Limit(n).Field("id").CoerceTo("array")
	return due.Do(func(ids r.Term) r.Term {
		return r.Branch(ids.Count().Ge(n), ids, ids.Add(q.byPriority(i+1, n.Sub(ids.Count()), usable)))
	})
}

// nextDueTerm finds when the earliest waiting or failed job that is not due yet falls due:
// one range read per priority. It runs only when a claim came back short and the head did
// not hold the whole index.
func (q *Queue) nextDueTerm() r.Term {
	idx := dbinit.IndexClaim
	firsts := make([]any, len(priorities))
	for i, p := range priorities {
		firsts[i] = q.readTable().Between([]any{int(p), r.Now(), r.MinVal, r.MinVal}, []any{int(p), r.MaxVal, r.MaxVal, r.MaxVal}, r.BetweenOpts{Index: idx}).
			OrderBy(r.OrderByOpts{Index: idx}).Limit(1).Field("dateEnable").CoerceTo("array")
	}
	return r.Expr(firsts).ConcatMap(func(d r.Term) r.Term { return d }).
		Filter(func(d r.Term) r.Term { return d.TypeOf().Eq("PTYPE<TIME>") }).
		Do(func(ds r.Term) r.Term { return r.Branch(ds.IsEmpty(), nil, ds.Min()) })
}

// readCandidates runs the candidate read.
func (q *Queue) readCandidates(ctx context.Context, n int, skip []string) (candidates, error) {
	var c candidates
	if err := q.readOne(ctx, q.candidateTerm(n, skip), &c); err != nil {
		return candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", q.cfg.name, err)
	}
	return c, nil
}

// readNextDue runs nextDueTerm; zero when no job is waiting to fall due.
func (q *Queue) readNextDue(ctx context.Context) (time.Time, error) {
	var next *time.Time
	if err := q.readOne(ctx, q.nextDueTerm(), &next); err != nil {
		return time.Time{}, fmt.Errorf("queue %s: look for delayed jobs: %w", q.cfg.name, err)
	}
	if next == nil {
		return time.Time{}, nil
	}
	return *next, nil
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
