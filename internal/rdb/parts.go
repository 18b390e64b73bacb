package rdb

import (
	"cmp"
	"context"
	"slices"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// Part reads: a worker of several on one table reads its own part of the claimable jobs
// first (PartOf, by the last character of the id), so that workers reading the head of
// the index together seldom aim at the same jobs, and takes the other parts' jobs only
// where it must not pass over them (a higher priority). Two forms of that read exist;
// the producer chooses between them (internal/processor/reads.go says when):
//
//   - the window (partWindowTerm): the part's due jobs among the first PartWindow entries
//     of the index, and the other parts' of a higher priority; every process's first
//     read, and every read while names, groups or sequences are held back;
//   - the due range (readPartDue): the part's due jobs of one priority from that
//     priority's range of due jobs, with no window, for a worker whose last part read
//     filled its slots with jobs of that priority; cheaper a job, since a range read
//     filters as it goes and stops at the n-th job, where the window reads all of its
//     entries first.

// PartWindow is how many entries of the index head a part read of n, of of parts,
// filters to its part at most (see readPart).
func PartWindow(n, of int) int { return headSize(n) * of }

// Part is one of Of parts of a table's jobs, by their ids.
type Part struct{ Index, Of int }

// PartOf is the part, of of, that job id belongs to: by the last character of the id,
// a hexadecimal digit of a random UUID for every job; an id that does not end with one
// belongs to none (-1).
//
// Not the first: jobs added together share their dates, and the claim index orders them
// by id, so by their first character. Parts by the first character made each part's jobs
// a run of the index's head, which the other parts' workers had to read past (a part's
// window then held few of its own jobs, and its worker filled its read with the others',
// aiming at their jobs). The last character is independent of that order, so every part
// has its share of any stretch of the index.
func PartOf(id string, of int) int {
	if of < 1 || id == "" {
		return -1
	}
	d := hexDigit(id[len(id)-1])
	if d < 0 {
		return -1
	}
	return d % of
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// lastChars are the last characters of the ids of part p (see PartOf).
func (p Part) lastChars() []any {
	var out []any
	for _, c := range []byte("0123456789abcdefABCDEF") {
		if PartOf(string(c), p.Of) == p.Index {
			out = append(out, string(c))
		}
	}
	return out
}

// readPart reads, among the due jobs of the index's head (the first headSize(n) per
// part), up to n of part skip.Part's, and, up to n, those of the other parts that a claim
// must not pass over: of a higher priority than the last of the part's own (every other
// part's when the part has fewer than skip.Enough). A part's jobs are not spread evenly
// over the head: jobs added together share their dates, and the index orders them by id,
// so by part. Filling a read ahead with other parts' jobs of the same priority made the
// workers aim at each other's jobs: with 4 processes on a backlog added in bulk, a
// quarter of the claims missed some (measured on RethinkDB 2.4.4). A worker then claims
// its own jobs first within a priority, so that workers that read the head together
// seldom aim at the same jobs, and never starts a job of a lower priority while the head
// holds one of a higher priority in another worker's part. The part's own
// read stops at its n-th job, the others' reads only the index above the part's last
// priority (empty when that is the highest waiting, the usual case). With
// skip.DuePriority, the part's own jobs come from that priority's range of due jobs
// (readPartDue), else from a window of the index (partWindowTerm).
func (t *Table) readPart(ctx context.Context, n int, skip Skip) (head, error) {
	if skip.dueRange() {
		if h, ok, err := t.readPartDue(ctx, n, skip); err != nil || ok {
			return h, err
		}
	}
	var h head
	err := t.ReadOne(ctx, t.partWindowTerm(n, skip), &h)
	return h, err
}

// partWindowTerm is readPart's read of the part's jobs among the first PartWindow
// entries of the index, in one query.
func (t *Table) partWindowTerm(n int, skip Skip) r.Term {
	part, skip, mine, enough := partTests(n, skip)
	keep := notSkipped(skip)
	window := PartWindow(n, part.Of)
	// The part test first: it leaves out most documents, and the tests after it are then
	// not evaluated for them (measured on RethinkDB 2.4.4, a part read of 50 due jobs of
	// 4 parts: 15 ms of server CPU with it last, 11 with it first).
	own := t.claimRange(everyJob()).Limit(window).Filter(func(doc r.Term) r.Term {
		return mine(doc).And(keep(doc)).And(claimableNow(doc))
	}).Limit(n).CoerceTo("array")
	read := r.Do(own, func(own r.Term) r.Term {
		others := t.better(worstOf(own, enough)).Limit(window).Filter(func(doc r.Term) r.Term {
			return mine(doc).Not().And(keep(doc)).And(claimableNow(doc))
		}).Limit(n)
		return t.headOf(own.Union(others).CoerceTo("array"), n, enough, part.Of, skip)
	})
	// A read short of enough tells whether its window held every entry of the index: then
	// it saw every due job the skips leave (its own and the others', which a short read of
	// its own takes whole), and a read of the whole head would find no more. Only a short
	// read counts, at the end of a backlog, where the index is small.
	return r.Do(read, func(h r.Term) r.Term {
		return h.Merge(map[string]any{"whole": r.Branch(h.Field("docs").Count().Lt(enough),
			t.claimRange(everyJob()).Limit(window).Count().Lt(window), false)})
	})
}

// readPartDue is readPart for a worker whose last part read filled its slots with jobs
// of one priority (Skip.DuePriority): it reads up to n of the part's own due jobs of that
// priority, from the index's range of the due jobs of that priority, with no window, and
// up to n due jobs of a higher priority, of every part, as partWindowTerm reads the other
// parts' (a window of the index above the priority). ok is false when the range holds
// fewer than Enough of the part's jobs: readPart then reads the window.
//
// The window (partWindowTerm) reads all of its entries before it filters them, where a
// range read filters as it goes and stops at the n-th job: measured on RethinkDB 2.4.4
// with 8 worker processes, about 0.1–0.15 ms of server CPU a job (docs/performance.md).
// The range holds no job that is not due, however many are delayed; it does hold the
// other parts' due jobs of the priority, which the read passes over, so a worker uses it
// only while its last read found its fill there.
//
// The answer is a stream: the part's own jobs, and one row without an id that holds the
// look above their priority (partLook). RethinkDB reads a filtered range cut by a limit
// about three times further ahead when it is coerced to an array, as it must be to go
// into one object with the look (measured at 50 a read and 8 parts). Measured on
// RethinkDB 2.4.4, 8 worker processes of concurrency 10 (reads of 40): as a stream,
// 2.83 ms of server CPU a job against 3.34–3.36, and 0.90–0.93× the floor's rate against
// 0.74–0.81×; no difference at concurrency 50 (reads of 200) (docs/performance.md).
func (t *Table) readPartDue(ctx context.Context, n int, skip Skip) (h head, ok bool, err error) {
	part, skip, mine, enough := partTests(n, skip)
	keep := notSkipped(skip)
	// Keys are [-priority, -dateEnable, …] (see IndexClaim): the due jobs of a priority
	// are its keys from -now up.
	p := -*skip.DuePriority
	due := t.claimRange([]any{p, r.Now().ToEpochTime().Mul(-1), r.MinVal, r.MinVal}, []any{p, r.MaxVal, r.MaxVal, r.MaxVal})
	own := due.Filter(func(doc r.Term) r.Term {
		return mine(doc).And(keep(doc)).And(claimableNow(doc))
	}).Limit(n)
	// With enough of its own, the read's lowest priority is the range's, so the jobs of a
	// higher priority to take and the look for the next of them to fall due (see headOf)
	// read the same window of the index above it: one range read serves both. A range
	// read costs the server about 1.3–1.6 ms even when empty, the usual case (measured
	// on RethinkDB 2.4.4).
	above := t.better(r.Expr(*skip.DuePriority)).Limit(PartWindow(n, part.Of)).CoerceTo("array")
	look := r.Do(above, func(above r.Term) r.Term {
		higher := above.Filter(func(doc r.Term) r.Term { return keep(doc).And(claimableNow(doc)) }).Limit(n)
		return r.Expr([]any{map[string]any{partLook: map[string]any{"docs": higher.CoerceTo("array"), "next": nextDue(above, keep)}}})
	})
	var rows []map[string]any
	// Not interleaved: the look comes after the jobs, in the same batch more often than
	// from an interleaved union, which made the driver ask for the rest in a second round
	// trip about once a read.
	if err := t.runAll(ctx, own.UnionWithOpts(r.UnionOpts{Interleave: false}, look), t.opts, &rows); err != nil {
		return head{}, false, err
	}
	var docs []map[string]any
	for _, row := range rows {
		if _, isDoc := row[docfmt.ID]; isDoc {
			docs = append(docs, row)
			continue
		}
		l, _ := row[partLook].(map[string]any)
		h.Next = l["next"]
		higher, _ := l["docs"].([]any)
		for _, d := range higher {
			if doc, ok := d.(map[string]any); ok {
				h.Docs = append(h.Docs, doc)
			}
		}
	}
	if len(docs) < enough {
		return head{}, false, nil
	}
	h.Docs = append(h.Docs, docs...)
	return h, true, nil
}

// partLook is the field of the one row of readPartDue's answer that is not a document
// (it has no id): the look above the part's priority, a head without its part's jobs.
const partLook = "rjqLook"

// partTests splits a part read's skip into its part and the rest, and returns the test
// of the part's own documents and how many of them suffice (see Skip.Enough).
func partTests(n int, skip Skip) (part Part, rest Skip, mine func(doc r.Term) r.Term, enough int) {
	part, rest = skip.Part, skip
	rest.Part = Part{}
	// The id's last character, matched against a class of the part's: the test costs the
	// server what a slice of the id looked up in a list costs, and unlike a slice it does
	// not fail the whole read for an id that is not a string (a document written by
	// hand), which the coercion makes one. Such a document cannot be processed: whichever
	// part reads it sets it aside. A part that has no character (of more than 16 parts)
	// holds no job.
	mine = func(r.Term) r.Term { return r.Expr(false) }
	if chars := part.lastChars(); len(chars) > 0 {
		re := "["
		for _, c := range chars {
			re += c.(string)
		}
		re += "]$"
		mine = func(doc r.Term) r.Term { return doc.Field(docfmt.ID).CoerceTo("string").Match(re).Ne(nil) }
	}
	enough = n
	if skip.Enough > 0 && skip.Enough < n {
		enough = skip.Enough
	}
	return part, rest, mine, enough
}

// partOrder orders what readPart read for part as the part's worker claims it: by
// priority, its own jobs first within one, then in the index's order; at most n. (When
// the other parts' jobs filled their n, all of them come before any of the part's own of
// a lower priority, which the cut at n then leaves out.)
func partOrder(list []Candidate, part Part, n int) []Candidate {
	other := func(c Candidate) int {
		id, _ := c.ID.(string)
		return b2i(PartOf(id, part.Of) != part.Index)
	}
	slices.SortStableFunc(list, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.Key.Priority, b.Key.Priority), cmp.Compare(other(a), other(b)), a.Key.Compare(b.Key))
	})
	return list[:min(n, len(list))]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
