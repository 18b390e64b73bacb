package rdb

import (
	"context"
	"fmt"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Counting finished jobs costs the server about 6.5 µs per job counted (seconds at a
// million), and users keep finished jobs for months. So finished jobs are counted once:
// Queue Masters keep a tally in the side table "<queue>_stats", the finished jobs by
// status up to a time (asOf), advanced in bounded steps through the index of finished
// jobs by dateFinished, each step a compare-and-set on asOf so that masters never add
// a step twice (and one Master counts at a time: see master.AdvanceTally). Retention
// removes what it counted. Live jobs (waiting, active, failed) are few by comparison,
// and are counted exactly at each Summary.

// StatsSuffix names the side table of a queue's tally and retention lease.
const StatsSuffix = "_stats"

// The documents of the stats table.
const (
	tallyID     = "finished"
	retentionID = "retention"
)

// Tally is the count of finished jobs up to AsOf: those whose dateFinished comes before
// it, as counted then and less what retention removed since.
type Tally struct {
	AsOf       time.Time
	Completed  int
	Cancelled  int
	Terminated int
	// Found is false when there is no tally yet.
	Found bool
	// By is the queue whose Master started the tally or last moved it.
	By string
	// Moved is how long ago, by the server's clock, the tally was started or last moved;
	// negative when that is not known (a tally written by an earlier version, or by
	// hand).
	Moved time.Duration
}

// ReadTally reads the tally; Found is false when there is none.
func (t *Table) ReadTally(ctx context.Context) (Tally, error) {
	var docs []map[string]any
	tbl := t.Side(StatsSuffix)
	// The time since it moved is taken on the server, whose clock stamped it.
	term := tbl.GetAll(tallyID).Map(func(doc r.Term) r.Term {
		at := doc.Field(tallyMovedAt).Default(nil)
		return doc.Merge(map[string]any{tallyMovedFor: r.Branch(at.TypeOf().Eq("PTYPE<TIME>"), r.Now().Sub(at), nil)})
	})
	if err := t.readSide(ctx, tbl, term, &docs); err != nil || len(docs) == 0 {
		return Tally{}, err
	}
	return tallyOf(docs[0]), nil
}

// tallyMovedAt is the tally document's field of the server's time when it was started
// or last moved; tallyMovedFor is the seconds since then, which ReadTally adds to what it
// reads.
const (
	tallyMovedAt  = "movedAt"
	tallyMovedFor = "rjqMovedFor"
)

// tallyOf reads a tally document; fields of the wrong type (written by hand) count as
// zero, and a tally without a time as none.
func tallyOf(doc map[string]any) Tally {
	var tl Tally
	tl.AsOf, tl.Found = doc["asOf"].(time.Time)
	n := func(k string) int {
		f, _ := docfmt.Number(doc[k])
		return int(f)
	}
	tl.Completed, tl.Cancelled, tl.Terminated = n(string(job.Completed)), n(string(job.Cancelled)), n(string(job.Terminated))
	tl.By, _ = doc["queueId"].(string)
	tl.Moved = -1
	if secs, ok := docfmt.Number(doc[tallyMovedFor]); ok {
		tl.Moved = max(time.Duration(secs*float64(time.Second)), 0)
	}
	return tl
}

// StartTally creates the tally at asOf with nothing counted, unless there is one.
func (t *Table) StartTally(ctx context.Context, asOf time.Time) error {
	// Times cut to the millisecond, as the server keeps them: the steps compare asOf for
	// equality with the value read back.
	doc := map[string]any{"id": tallyID, "asOf": docfmt.Millis(asOf), "queueId": t.QueueID, tallyMovedAt: r.Now(),
		string(job.Completed): 0, string(job.Cancelled): 0, string(job.Terminated): 0}
	var res WriteResult
	err := t.WriteOne(ctx, t.Side(StatsSuffix).Insert(doc), &res)
	if err == nil && res.Errors > 0 && !isDuplicate(res.FirstError) {
		err = fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	return err
}

// FirstFinished is the dateFinished of the job that finished first, zero when none did.
func (t *Table) FirstFinished(ctx context.Context) (time.Time, error) {
	var at []time.Time
	err := t.ReadAll(ctx, t.readTable().OrderBy(r.OrderByOpts{Index: IndexFinishedDateFinished}).Limit(1).Field(docfmt.DateFinished), &at)
	if err != nil || len(at) == 0 {
		return time.Time{}, err
	}
	return at[0], nil
}

// CountFinished counts, by status, the finished jobs whose dateFinished is in [from, to).
// It sums one small object per job rather than grouping: reqlite, CI's server, cannot
// return grouped data from a range of a secondary index.
func (t *Table) CountFinished(ctx context.Context, from, to time.Time) (map[job.Status]int, error) {
	statuses := []job.Status{job.Completed, job.Cancelled, job.Terminated}
	zero := make(map[string]any, len(statuses))
	for _, s := range statuses {
		zero[string(s)] = 0
	}
	// The zero in front keeps the reduction from meeting an empty range.
	term := r.Expr([]any{zero}).Union(t.readTable().Between(from, to, r.BetweenOpts{Index: IndexFinishedDateFinished}).Map(func(row r.Term) any {
		one := make(map[string]any, len(statuses))
		for _, s := range statuses {
			one[string(s)] = r.Branch(row.Field(docfmt.Status).Eq(string(s)), 1, 0)
		}
		return one
	})).Reduce(func(a, b r.Term) any {
		sum := make(map[string]any, len(statuses))
		for _, s := range statuses {
			sum[string(s)] = a.Field(string(s)).Add(b.Field(string(s)))
		}
		return sum
	})
	var got map[string]int
	if err := t.ReadOne(ctx, term, &got); err != nil {
		return nil, err
	}
	counts := make(map[job.Status]int, len(got))
	for s, n := range got {
		counts[job.Status(s)] = n
	}
	return counts, nil
}

// AdvanceTally adds counts to the tally and moves it from from to to, if it is still at
// from; false when another master moved it first.
func (t *Table) AdvanceTally(ctx context.Context, from, to time.Time, counts map[job.Status]int) (bool, error) {
	res, err := t.Write(ctx, t.Side(StatsSuffix).Get(tallyID).Update(func(row r.Term) any {
		add := func(s job.Status) r.Term {
			return row.Field(string(s)).Default(0).Add(counts[s])
		}
		return r.Branch(row.Field("asOf").Eq(docfmt.Millis(from)), map[string]any{
			"asOf": docfmt.Millis(to), "queueId": t.QueueID, tallyMovedAt: r.Now(),
			string(job.Completed): add(job.Completed), string(job.Cancelled): add(job.Cancelled),
			string(job.Terminated): add(job.Terminated),
		}, nil)
	}))
	return res.Replaced == 1, err
}

// ExactBelowJobs is the table size, by the server's own estimate, below which a Summary
// counts every job, tally or not: a count costs the server about 6.5 µs per job, 65 ms
// here.
const ExactBelowJobs = 10000

// Counts are a table's jobs by status.
type Counts struct {
	ByStatus map[job.Status]int
	// FinishedAsOf, when not zero, says that the finished statuses (completed, cancelled,
	// terminated) come from the tally: exact up to that time, jobs that finished since
	// not counted. The live statuses are always exact.
	FinishedAsOf time.Time
	// FinishedUnknown says that the table is too big to count its finished jobs on a
	// request and has no tally yet: ByStatus holds the live statuses only, and
	// FinishedEstimate the server's estimate of the rest (its document count estimate less
	// the live jobs).
	FinishedUnknown  bool
	FinishedEstimate int
}

// Counts counts the table's jobs: every one, with one grouped count on the status index,
// while the table holds fewer than exactBelow documents; else the live jobs through the
// status index and the finished ones from the tally, so that the count costs the same at
// a million finished jobs as at none. A big table with no tally yet (a queue that Node.js
// workers filled, adopted before any Queue Master of this library ran) is never scanned
// on a request: its finished jobs are FinishedUnknown, with an estimate.
func (t *Table) Counts(ctx context.Context, exactBelow int) (Counts, error) {
	size, err := t.EstimatedSize(ctx)
	if err != nil || size < exactBelow {
		counts, err := t.CountByStatus(ctx)
		return Counts{ByStatus: counts}, err
	}
	tally, err := t.ReadTally(ctx)
	if err != nil {
		return Counts{}, err
	}
	live, err := t.LiveCounts(ctx)
	if err != nil {
		return Counts{}, err
	}
	if !tally.Found {
		n := size
		for _, k := range live {
			n -= k
		}
		return Counts{ByStatus: live, FinishedUnknown: true, FinishedEstimate: max(n, 0)}, nil
	}
	live[job.Completed], live[job.Cancelled], live[job.Terminated] = tally.Completed, tally.Cancelled, tally.Terminated
	return Counts{ByStatus: live, FinishedAsOf: tally.AsOf}, nil
}

// LiveCounts counts the waiting, active, failed and blocked jobs, through the status
// index.
func (t *Table) LiveCounts(ctx context.Context) (map[job.Status]int, error) {
	statuses := []job.Status{job.Waiting, job.Active, job.Failed, job.Blocked}
	terms := make(map[string]any, len(statuses))
	for _, s := range statuses {
		terms[string(s)] = t.Term().GetAllByIndex(IndexStatus, string(s)).Count()
	}
	var got map[string]int
	if err := t.ReadOne(ctx, r.Expr(terms), &got); err != nil {
		return nil, err
	}
	counts := make(map[job.Status]int, len(got))
	for s, n := range got {
		counts[job.Status(s)] = n
	}
	return counts, nil
}

// EstimatedSize is the server's estimate of how many documents the table holds, read from
// its metadata: no document is read.
func (t *Table) EstimatedSize(ctx context.Context) (int, error) {
	var info struct {
		Estimates []int `rethinkdb:"doc_count_estimates"`
	}
	if err := t.ReadOne(ctx, t.Term().Info(), &info); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range info.Estimates {
		n += e
	}
	return n, nil
}

// FinishedSlice is finished jobs that a slice of retention removes.
type FinishedSlice struct {
	// Removed counts them by status; Before holds those that finished before the tally's
	// time (counted by it), by status.
	Removed, Before map[job.Status]int
	// Full is true when the slice was as big as allowed: more may wait.
	Full bool
}

// RemoveFinishedSlice removes up to n finished jobs whose dateFinished is before upTo
// (every finished job when upTo is zero), through indexFinishedDateFinished, and takes
// those the tally counted off it, in two bounded queries.
func (t *Table) RemoveFinishedSlice(ctx context.Context, upTo time.Time, n int) (FinishedSlice, error) {
	bound := any(r.MaxVal)
	if !upTo.IsZero() {
		bound = upTo
	}
	var found []struct {
		ID           string    `rethinkdb:"id"`
		Status       string    `rethinkdb:"status"`
		DateFinished time.Time `rethinkdb:"dateFinished"`
	}
	term := t.Term().Between(r.MinVal, bound, r.BetweenOpts{Index: IndexFinishedDateFinished}).Limit(n).
		Pluck(docfmt.ID, docfmt.Status, docfmt.DateFinished)
	if err := t.ReadAll(ctx, term, &found); err != nil {
		return FinishedSlice{}, err
	}
	s := FinishedSlice{Removed: map[job.Status]int{}, Before: map[job.Status]int{}, Full: len(found) == n}
	if len(found) == 0 {
		return s, nil
	}
	ids := make([]any, len(found))
	finished := make([]any, len(found))
	for i, f := range found {
		ids[i] = f.ID
		finished[i] = map[string]any{"s": f.Status, "d": f.DateFinished}
	}
	// Only jobs still finished, and finished before the bound, go: one reanimated or
	// finished again since the read stays.
	still := func(row r.Term) r.Term {
		done := r.Expr(finishedStatuses).Contains(row.Field(docfmt.Status).Default(""))
		if upTo.IsZero() {
			return done
		}
		return done.And(row.Field(docfmt.DateFinished).Default(nil).Lt(upTo))
	}
	res, err := t.Write(ctx, t.Term().GetAll(ids...).Filter(still).Delete())
	if err != nil {
		return s, err
	}
	tally, err := t.ReadTally(ctx)
	if err != nil {
		return s, err
	}
	for _, f := range found {
		st := job.Status(f.Status)
		s.Removed[st]++
		if tally.Found && f.DateFinished.Before(tally.AsOf) {
			s.Before[st]++
		}
	}
	if res.Deleted < len(found) {
		// A few changed between the read and the delete: the tally may be off by them
		// until the next count, which Summary's doc allows for.
		scale(s.Removed, res.Deleted, len(found))
		scale(s.Before, res.Deleted, len(found))
	}
	if len(s.Before) > 0 && tally.Found {
		if err := t.subtractTally(ctx, s.Before); err != nil {
			return s, err
		}
	}
	return s, nil
}

// scale reduces counts by got/of, for a delete that removed fewer than it was given.
func scale(counts map[job.Status]int, got, of int) {
	for k, v := range counts {
		counts[k] = v * got / of
	}
}

// subtractTally takes counts off the tally, never below zero.
func (t *Table) subtractTally(ctx context.Context, counts map[job.Status]int) error {
	_, err := t.Write(ctx, t.Side(StatsSuffix).Get(tallyID).Update(func(row r.Term) any {
		set := make(map[string]any, len(counts))
		for s, n := range counts {
			left := row.Field(string(s)).Default(0).Sub(n)
			set[string(s)] = r.Branch(left.Lt(0), 0, left)
		}
		return set
	}))
	return err
}

// TakeRetention takes, or renews, the lease that lets one master remove finished jobs
// at a time, for d; false when another master holds it.
func (t *Table) TakeRetention(ctx context.Context, d time.Duration) (bool, error) {
	until := r.Now().Add(d.Seconds())
	var res WriteResult
	err := t.WriteOne(ctx, t.Side(StatsSuffix).Insert(map[string]any{"id": retentionID, "holder": t.QueueID, "until": until}), &res)
	switch {
	case err != nil:
		return false, err
	case res.Inserted == 1:
		return true, nil
	case res.Errors > 0 && !isDuplicate(res.FirstError):
		return false, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	res, err = t.Write(ctx, t.Side(StatsSuffix).Get(retentionID).Update(func(old r.Term) any {
		free := old.Field("holder").Default("").Eq(t.QueueID).Or(old.Field("until").Default(r.EpochTime(0)).Lt(r.Now()))
		return r.Branch(free, map[string]any{"holder": t.QueueID, "until": until}, nil)
	}))
	return res.Replaced == 1, err
}

// ReleaseRetention gives the lease back, if this queue holds it.
func (t *Table) ReleaseRetention(ctx context.Context) error {
	_, err := t.Write(ctx, t.Side(StatsSuffix).Get(retentionID).Update(func(row r.Term) any {
		return r.Branch(row.Field("holder").Eq(t.QueueID), map[string]any{"until": r.EpochTime(0)}, nil)
	}))
	if NoTable(err) {
		return nil
	}
	return err
}

func isDuplicate(msg string) bool { return strings.Contains(msg, "Duplicate primary key") }
