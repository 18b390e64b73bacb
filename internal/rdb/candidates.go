package rdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A claim is a read that proposes Candidates, and a write that switches them to active
// (claim.go).
//
// What the read costs on a real RethinkDB is its index range reads, not its round trips
// (shared/notes/rethinkdb-facts.md), so:
//
//   - Candidates are read through IndexClaim, in its descending order (see it for why),
//     whose keys never tie, so a range read stops at what it takes however many jobs were
//     added in the same millisecond.
//   - The common case is one streamed range read: the head of the whole index in priority
//     order, at most headSize entries, filtered to the due jobs and cut at the free slots.
//   - Only when that comes back short (fewer due jobs than free slots: the queue is not
//     saturated), and the index holds more than the head gave (one unordered read of a few
//     entries tells), does the queue read each priority's band of the index, the seven at once (see
//     bands): due jobs come first in a band, so this finds the due jobs that not-due jobs of a
//     higher priority hid from the head (a delayed job of high priority never holds back
//     due jobs: the original's issue #83), and, from the first job after them, when the
//     next delayed job falls due.
//   - The reads run in readMode "outdated": they only propose candidates, each decoded on
//     its own with this library's reading rules, so that one document of the wrong shape
//     is set aside without failing the read. The write is a compare-and-set on the
//     primary, so a stale candidate, or one claimed or changed elsewhere since, is merely
//     not claimed.

// priorities in processing order.
var priorities = []job.Priority{job.Highest, job.High, job.Medium, job.Normal, job.Low, job.Lowest}

// PriorityValues are the priorities' values, in processing order.
func PriorityValues() []int {
	out := make([]int, len(priorities))
	for i, p := range priorities {
		out[i] = int(p)
	}
	return out
}

// headSize is how many entries of the index head a claim of n reads at most.
func headSize(n int) int { return n + 32 }

// readTable is the queue's table for reads that only propose candidates.
func (t *Table) readTable() r.Term {
	return r.DB(t.DB).Table(t.Name, r.TableOpts{ReadMode: "outdated"})
}

// claimRange is the claim index between lo and hi, in processing order: the index's
// descending order (see IndexClaim).
func (t *Table) claimRange(lo, hi []any) r.Term {
	return t.readTable().Between(lo, hi, r.BetweenOpts{Index: IndexClaim, RightBound: "closed"}).OrderBy(r.OrderByOpts{Index: r.Desc(IndexClaim)})
}

// everyJob bounds the whole claim index: every priority, and the jobs whose fields it
// cannot read.
func everyJob() (lo, hi []any) {
	return []any{r.MinVal, r.MinVal, r.MinVal, r.MinVal}, []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
}

// bands are the claim index's ranges that ReadCandidates reads one by one, in processing
// order: the priorities above Highest with the fields the index cannot read, then one
// band per priority that also holds what a document written by hand may hold between it
// and the next one (15 goes after Highest), Lowest's band everything below it. Together
// they hold the whole index, so no document of any priority is out of every band's
// sight.
func bands() [][2][]any {
	out := make([][2][]any, 0, len(priorities)+1)
	upper := []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
	for _, p := range priorities {
		// Keys are [-priority, …]: a band ends, closed, after the last key of -p, and
		// starts after the last key of the band below it.
		out = append(out, [2][]any{{-int(p), r.MaxVal, r.MaxVal, r.MaxVal}, upper})
		upper = []any{-int(p), r.MaxVal, r.MaxVal, r.MaxVal}
	}
	out = append(out, [2][]any{{r.MinVal, r.MinVal, r.MinVal, r.MinVal}, upper})
	return out
}

// Skip is what a claim leaves out: documents by id (those it cannot process; an id is
// any value a primary key can hold), and jobs by name (held back by a rate limit or a
// time window).
type Skip struct {
	IDs   []any
	Names []string
	// Groups leaves out the jobs of these groups (job.SetGroup).
	Groups []string
	// Sequences leaves out the jobs of these sequences (job.SetSequence).
	Sequences []string
	// Part, when Of is 2 or more, leaves out the jobs of every part but Part.Index (see
	// PartOf).
	Part Part
	// Enough, reading a part, is how many of the part's own jobs suffice (the free
	// slots; 0: as many as the read asks for). Once it finds that many, it takes no job
	// of another part of the same priority as its last, which that part's worker would
	// aim at too, only those of a higher priority.
	Enough int
	// DuePriority, reading a part, when set, reads the part's own jobs from the due jobs
	// of that priority alone, with no window, and every part's jobs of a higher priority
	// (see readPart): for a worker whose last part read filled its free slots with jobs
	// of that priority. It is not used while names, groups or sequences are held back,
	// whose due jobs such a read would pass over on every read.
	DuePriority *float64
}

// dueRange reports whether a part read takes its own jobs from skip.DuePriority's due
// range (see Skip.DuePriority).
func (skip Skip) dueRange() bool {
	return skip.DuePriority != nil && len(skip.Names) == 0 && len(skip.Groups) == 0 && len(skip.Sequences) == 0
}

// notSkipped leaves out the documents of skip but its part (see readPart).
func notSkipped(skip Skip) func(doc r.Term) r.Term {
	ids, names := r.Expr(skip.IDs), r.Expr(skip.Names)
	return func(doc r.Term) r.Term {
		keep := ids.Contains(doc.Field(docfmt.ID)).Not()
		if len(skip.Names) > 0 {
			keep = keep.And(names.Contains(doc.Field(docfmt.Name).Default(nil)).Not())
		}
		if len(skip.Groups) > 0 {
			keep = keep.And(r.Expr(skip.Groups).Contains(fieldOr(doc, docfmt.Group, nil)).Not())
		}
		if len(skip.Sequences) > 0 {
			keep = keep.And(r.Expr(skip.Sequences).Contains(fieldOr(doc, docfmt.Sequence, nil)).Not())
		}
		return keep
	}
}

// claimableNow is true for a document whose dateEnable is a time that has come, and for
// one whose dateEnable is not a time at all: no claim takes that one, but the read must
// propose it so that it is reported and set aside rather than ignored for ever.
func claimableNow(doc r.Term) r.Term {
	enable := doc.Field(docfmt.DateEnable).Default(nil)
	return enable.TypeOf().Ne("PTYPE<TIME>").Or(enable.Le(r.Now()))
}

// head is what a read of the index's head found: the due jobs to claim, and when the
// first job of a higher priority than the last of them (of any, when they are fewer than
// n) that is not due yet falls due, nil when there is none in the head: a worker that
// claims from what it read ahead reads again then, so that such a job, a delayed one or
// a retry, keeps its place.
type head struct {
	Docs []map[string]any `rethinkdb:"docs"`
	Next any              `rethinkdb:"next"`
	// Whole is set by a part read whose window held the whole index (see readPart).
	Whole bool `rethinkdb:"whole"`
}

// better is the part of the claim index of a higher priority than worst (a job's
// priority field as read; nil or not a number: the whole index).
func (t *Table) better(worst r.Term) r.Term {
	lo, hi := everyJob()
	all := t.readTable().Between(lo, hi, r.BetweenOpts{Index: IndexClaim, RightBound: "closed"})
	above := t.readTable().Between(r.Expr([]any{worst.Mul(-1), r.MaxVal, r.MaxVal, r.MaxVal}), hi,
		r.BetweenOpts{Index: IndexClaim, LeftBound: "open", RightBound: "closed"})
	return r.Branch(worst.TypeOf().Eq("NUMBER"), above, all).OrderBy(r.OrderByOpts{Index: r.Desc(IndexClaim)})
}

// worstOf is the lowest priority among docs (an array) when they are n or more, else nil.
func worstOf(docs r.Term, n int) r.Term {
	return r.Branch(docs.Count().Lt(n), nil, docs.Map(func(doc r.Term) r.Term { return doc.Field(docfmt.Priority).Default(nil) }).Max())
}

// headOf is the head read of docs (the due jobs chosen, an array in the index's order)
// for a claim of n: with the time the first job of a higher priority than theirs falls
// due (of any, when they are fewer than enough), among the first headSize(n) × of of the
// index above them. When docs are of the highest priority there is (the usual case),
// that part of the index is empty, and the read costs one index seek.
func (t *Table) headOf(docs r.Term, n, enough, of int, skip Skip) r.Term {
	keep := notSkipped(skip)
	return r.Do(docs, func(docs r.Term) r.Term {
		return r.Expr(map[string]any{"docs": docs, "next": nextDue(t.better(worstOf(docs, enough)).Limit(headSize(n)*of), keep)})
	})
}

// nextDue is when the first of rows (entries of the claim index) that keep keeps and that
// is not due yet falls due: nil when there is none.
func nextDue(rows r.Term, keep func(doc r.Term) r.Term) r.Term {
	ahead := rows.Filter(func(doc r.Term) r.Term {
		return claimableNow(doc).Not().And(keep(doc))
	}).Map(func(doc r.Term) r.Term { return doc.Field(docfmt.DateEnable) }).CoerceTo("array")
	return r.Do(ahead, func(ahead r.Term) r.Term { return r.Branch(ahead.IsEmpty(), nil, ahead.Min()) })
}

// headTerm reads up to n due jobs among the first headSize(n) of the index.
func (t *Table) headTerm(n int, skip Skip) r.Term {
	keep := notSkipped(skip)
	docs := t.claimRange(everyJob()).Limit(headSize(n)).Filter(func(doc r.Term) r.Term {
		return keep(doc).And(claimableNow(doc))
	}).Limit(n).CoerceTo("array")
	return t.headOf(docs, n, n, 1, skip)
}

// entry is one job of a priority's range, as priorityTerm reads it: the document when it
// is due, when it falls due otherwise (any value: a hand-written document may hold
// anything there).
type entry struct {
	Doc map[string]any `rethinkdb:"doc"`
	Due bool           `rethinkdb:"due"`
	At  any            `rethinkdb:"at"`
}

// bandTerm reads the first n+1 jobs of a band (see bands): its due jobs come first, then
// the ones not due yet in the order they fall due.
func (t *Table) bandTerm(band [2][]any, n int, skip Skip) r.Term {
	return t.claimRange(band[0], band[1]).Filter(notSkipped(skip)).Limit(n + 1).Map(func(doc r.Term) any {
		due := claimableNow(doc)
		return map[string]any{"doc": r.Branch(due, doc, nil), "due": due, "at": doc.Field(docfmt.DateEnable).Default(nil)}
	})
}

// Candidate is a due job that the candidate read proposes for a claim, decoded on its
// own.
type Candidate struct {
	// ID is the document's primary key as stored (a string for every job; a document
	// written by hand may hold another type), for leaving it out of later reads.
	ID any
	// Job is the job, or nil when the document cannot be processed: Err says why.
	Job *job.Job
	Err error
	// Key is the job's place in the claim index, which orders the jobs a claim wins.
	Key ClaimKey
}

// Candidates is what the candidate read found.
type Candidates struct {
	// List holds the due jobs to claim, in processing order, with those that cannot be
	// processed among them.
	List []Candidate
	// NextDue is when the earliest job that is not due yet falls due; zero when there is
	// none. A read that found its n jobs in the head looks only at the head's jobs of a
	// higher priority than the last it found (see head).
	NextDue time.Time
	// Whole is true when a read of a part (Skip.Part) came back short of Skip.Enough
	// having seen the whole index: List then holds every due job the skips leave, of
	// every part, and NextDue is exact; a read without the part would find no more.
	Whole bool
}

// ReadCandidates reads up to n due jobs to claim (see the top of this file). Reading a
// part (skip.Part), it reads the head of the index only (see readPart): a short answer
// then says nothing of the rest of the index.
func (t *Table) ReadCandidates(ctx context.Context, n int, skip Skip) (Candidates, error) {
	if skip.Part.Of > 1 {
		h, err := t.readPart(ctx, n, skip)
		if err != nil {
			return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
		}
		return Candidates{List: partOrder(candidatesOf(h.Docs), skip.Part, n), NextDue: nextOf(h.Next), Whole: h.Whole}, nil
	}
	var h head
	if err := t.ReadOne(ctx, t.headTerm(n, skip), &h); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	docs := h.Docs
	c := Candidates{List: candidatesOf(docs), NextDue: nextOf(h.Next)}
	if len(docs) == n {
		return c, nil
	}
	// Short: when the index holds nothing but what the head gave, there is no due job a
	// delayed one hides and no delayed job to wait for, and one unordered read of a few
	// entries says so; an idle queue spares the six reads below at every claim.
	var more int
	lo, hi := everyJob()
	rest := t.readTable().Between(lo, hi, r.BetweenOpts{Index: IndexClaim, RightBound: "closed"}).
		Filter(notSkipped(skip)).Limit(len(docs) + 1).Count()
	if err := t.ReadOne(ctx, rest, &more); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	if more <= len(docs) {
		return c, nil
	}
	bs := bands()
	ranges := make([][]entry, len(bs))
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Go(func() { errs[i] = t.ReadAll(ctx, t.bandTerm(b, n, skip), &ranges[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Candidates{}, fmt.Errorf("queue %s: read jobs to claim: %w", t.Name, err)
	}
	docs = docs[:0]
	for _, rng := range ranges {
		for _, e := range rng {
			at, isTime := e.At.(time.Time)
			switch {
			case e.Due && e.Doc != nil && len(docs) < n:
				docs = append(docs, e.Doc)
			case !e.Due && isTime && (c.NextDue.IsZero() || at.Before(c.NextDue)):
				c.NextDue = at
			}
		}
	}
	c.List = candidatesOf(docs)
	return c, nil
}

// headWindow bounds the index entries HeadPriority reads.
const headWindow = 64

// HeadPriority reads the priority of the job a claim would take first: the first due job
// of the claim index, of every part, that skip does not leave out, among the first
// headWindow entries. ok is false when the window holds none, or that job's priority is
// not a number. It costs the server a tenth of a part read of 50 or less (measured on
// RethinkDB 2.4.4, 20,000 waiting jobs: 1.3–2.0 ms of server CPU, against 17–18.5 ms for
// a part read of 4 parts and 24–27 ms of 8).
func (t *Table) HeadPriority(ctx context.Context, skip Skip) (priority float64, ok bool, err error) {
	var out []any
	if err := t.ReadAll(ctx, t.headLook(skip), &out); err != nil {
		return 0, false, fmt.Errorf("queue %s: read the head of the table: %w", t.Name, err)
	}
	priority, ok = headOfLook(out)
	return priority, ok, nil
}

// headLook is HeadPriority's read: the priority field of the first due job that skip
// leaves (of every part), as a sequence of one or none.
func (t *Table) headLook(skip Skip) r.Term {
	skip.Part = Part{}
	keep := notSkipped(skip)
	return t.claimRange(everyJob()).Limit(headWindow).Filter(func(doc r.Term) r.Term {
		return keep(doc).And(claimableNow(doc))
	}).Limit(1).Map(func(doc r.Term) any { return doc.Field(docfmt.Priority).Default(nil) })
}

// headOfLook reads what headLook returned: no answer for none, or a priority that is not
// a number.
func headOfLook(out []any) (float64, bool) {
	if len(out) == 0 {
		return 0, false
	}
	return docfmt.Number(out[0])
}

// nextOf is the time of a head's Next, zero when it holds none (or, written by hand, no
// time).
func nextOf(v any) time.Time {
	t, _ := v.(time.Time)
	return t
}

// candidatesOf decodes each document of a candidate read on its own.
func candidatesOf(docs []map[string]any) []Candidate {
	out := make([]Candidate, len(docs))
	for i, doc := range docs {
		c := Candidate{ID: doc[docfmt.ID], Key: keyOf(doc)}
		c.Job, c.Err = Claimable(doc)
		out[i] = c
	}
	return out
}

// Claimable reads a candidate as a job, or says why it cannot be processed: every field
// this library reads must have a type it can read (FromDocument), and the counters and
// durations the claim and the outcome compute with must be there, the counters whole
// numbers that a claim can compare as they are stored. A document that fails (written by
// hand or by another tool) is never claimed, so it cannot block the jobs behind it.
func Claimable(doc map[string]any) (*job.Job, error) {
	if _, ok := doc[docfmt.Log].([]any); !ok {
		return nil, fmt.Errorf("%w: field %q is %T, not an array", job.ErrInvalidDocument, docfmt.Log, doc[docfmt.Log])
	}
	return ClaimableWithoutLog(doc)
}

// ClaimableWithoutLog is Claimable for a document as the changefeed gives it, without
// its log: every claim, by a read or by a hint from the feed, takes only what Claimable
// takes, so that no document is both reported and run. A log that is not an array fails
// the claim's write for that document alone; the next read reports it.
func ClaimableWithoutLog(doc map[string]any) (*job.Job, error) {
	for _, f := range []string{docfmt.Priority, docfmt.Timeout, docfmt.RetryDelay, docfmt.RetryCount, docfmt.RetryMax, docfmt.ProcessCount} {
		n, ok := docfmt.Number(doc[f])
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("%w: field %q is %T %v, not a number", job.ErrInvalidDocument, f, doc[f], doc[f])
		}
		if math.Abs(n) > maxSafeInt {
			return nil, fmt.Errorf("%w: field %q is %v, beyond what a job can count", job.ErrInvalidDocument, f, n)
		}
	}
	for _, f := range []string{docfmt.RetryCount, docfmt.ProcessCount} {
		if n, _ := docfmt.Number(doc[f]); n != math.Trunc(n) || n < 0 {
			return nil, fmt.Errorf("%w: field %q is %v, not a count", job.ErrInvalidDocument, f, n)
		}
	}
	for _, f := range []string{docfmt.Timeout, docfmt.RetryDelay} {
		if n, _ := docfmt.Number(doc[f]); n < 0 || n > maxMillis {
			return nil, fmt.Errorf("%w: field %q is %v, not a duration in milliseconds", job.ErrInvalidDocument, f, n)
		}
	}
	if _, ok := doc[docfmt.DateEnable].(time.Time); !ok {
		return nil, fmt.Errorf("%w: field %q is %T %v, not a time", job.ErrInvalidDocument, docfmt.DateEnable, doc[docfmt.DateEnable], doc[docfmt.DateEnable])
	}
	return FromDocument(nil, doc)
}

// ClaimKey is a job's place in the claim index: the order in which claims take jobs.
type ClaimKey struct {
	Priority    float64
	DateEnable  time.Time
	DateCreated time.Time
}

// Compare orders two keys as the index does.
func (a ClaimKey) Compare(b ClaimKey) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority),
		a.DateEnable.Compare(b.DateEnable),
		a.DateCreated.Compare(b.DateCreated))
}

// keyOf is the claim index key of a job document; the zero key for fields it cannot read.
func keyOf(doc map[string]any) ClaimKey {
	var k ClaimKey
	k.Priority, _ = docfmt.Number(doc[docfmt.Priority])
	k.DateEnable, _ = doc[docfmt.DateEnable].(time.Time)
	k.DateCreated, _ = doc[docfmt.DateCreated].(time.Time)
	return k
}

// KeyOf is the claim index key of a job.
func KeyOf(j *job.Job) ClaimKey {
	return ClaimKey{Priority: float64(j.Priority), DateEnable: j.DateEnable, DateCreated: j.DateCreated}
}

// maxSafeInt is the largest integer a RethinkDB number (a float64) holds exactly, and
// maxMillis the longest duration, in milliseconds, a time.Duration holds.
const (
	maxSafeInt = 1<<53 - 1
	maxMillis  = float64(math.MaxInt64 / int64(time.Millisecond))
)
