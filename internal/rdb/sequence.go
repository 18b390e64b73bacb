package rdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Sequences (job.SetSequence): a job of a sequence runs only while it is the first of its
// key in IndexSequence (the unfinished jobs of the key, in the order they were added:
// SequenceHeads; told more cheaply, most of the time, by the job ahead of it: turn.go),
// and while its run holds the key's one running slot (SequenceSlot, taken like a
// group's). The first alone keeps the order, and keeps a failed job that will be
// retried ahead of the jobs behind it; the slot alone keeps one run at a time, even when a
// job added late by a process whose clock is behind comes first.

// SequenceSlot is the key of the one running slot of sequence key.
func SequenceSlot(key string) string { return "seq:" + key }

// ErrNoSequenceIndex is SequenceHeads' answer on a table whose IndexSequence is missing
// or not built yet: the jobs of sequences wait until it is.
var ErrNoSequenceIndex = errors.New("the table's index of sequences is missing or not built yet")

// EnsureSequenceIndex creates IndexSequence unless the table has it, and does not wait
// for it to be built.
func (t *Table) EnsureSequenceIndex(ctx context.Context) error {
	return t.ensureIndex(ctx, IndexSequence)
}

// SequenceHeads returns the first unfinished job of each sequence key, in the order they
// were added, as a candidate (its document read as a claim reads it); a key without one
// is left out. Each key costs one index range read.
func (t *Table) SequenceHeads(ctx context.Context, keys []string) (map[string]Candidate, error) {
	if len(keys) == 0 {
		return map[string]Candidate{}, nil
	}
	var got map[string][]map[string]any
	if err := t.keyEnds(ctx, keys, IndexSequence, func(end r.Term) r.Term { return end }, "first", &got); err != nil {
		return nil, err
	}
	out := make(map[string]Candidate, len(got))
	for k, docs := range got {
		if len(docs) > 0 {
			if c := candidatesOf(docs[:1])[0]; c.ID != nil {
				out[k] = c
			}
		}
	}
	return out, nil
}

// SequenceCount is what SequenceCounts found of one sequence's unfinished jobs.
type SequenceCount struct {
	// Waiting, Active and Failed count its jobs of each status (failed: to be retried).
	Waiting, Active, Failed int
	// Head is the id of its first job in IndexSequence's order: the one that runs now or
	// runs next.
	Head string
	// HeadStatus is the status of Head as read.
	HeadStatus job.Status
}

// SequenceCounts reads, through IndexSequence, at most most of the unfinished jobs of
// every sequence (only their key, place, id and status) and counts them by key; partial
// is true when there were more, and the counts are of those read. A table without the
// index (no job of a sequence was ever added) has none, at the cost of one query. While
// the index is being built (just after the first add of a job of a sequence), it reads at
// most most of the unfinished jobs through the status index instead.
func (t *Table) SequenceCounts(ctx context.Context, most int) (counts map[string]SequenceCount, partial bool, err error) {
	rows, partial, err := t.sequenceRowsByIndex(ctx, most)
	if err != nil && (strings.Contains(err.Error(), "before its construction was finished") ||
		strings.Contains(err.Error(), "Index `"+IndexSequence+"` was not found")) {
		// Created a moment ago: in the list, not readable yet.
		rows, partial, err = t.sequenceRowsByStatus(ctx, most)
	}
	if err != nil {
		return nil, false, fmt.Errorf("queue %s: count the jobs of sequences: %w", t.Name, err)
	}
	return countSequences(rows), partial, nil
}

// sequenceFields are the fields SequenceCounts reads of each job.
var sequenceFields = []any{"id", docfmt.Sequence, docfmt.SequenceAt, "status"}

// sequenceRowsByIndex reads at most most jobs of IndexSequence, in its order; none when
// the table has no such index.
func (t *Table) sequenceRowsByIndex(ctx context.Context, most int) ([]sequenceRow, bool, error) {
	read := t.Term().Between(r.MinVal, r.MaxVal, r.BetweenOpts{Index: IndexSequence}).
		OrderBy(r.OrderByOpts{Index: IndexSequence}).Limit(most + 1).Pluck(sequenceFields...).CoerceTo("array")
	// Asked first rather than told by an error, whose text servers word differently.
	term := r.Branch(t.Term().IndexList().Contains(IndexSequence), read, r.Expr([]any{}))
	var rows []sequenceRow
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		return nil, false, err
	}
	return rows[:min(len(rows), most)], len(rows) > most, nil
}

// sequenceRowsByStatus reads the jobs of sequences among at most most of the unfinished
// jobs, through the status index, and puts them in IndexSequence's order.
func (t *Table) sequenceRowsByStatus(ctx context.Context, most int) ([]sequenceRow, bool, error) {
	live := t.Term().GetAllByIndex(IndexStatus, string(job.Waiting), string(job.Failed), string(job.Active)).Limit(most + 1)
	term := r.Do(live.Pluck(sequenceFields...).CoerceTo("array"), func(rows r.Term) any {
		return map[string]any{"read": rows.Count(), "rows": rows.Limit(most).Filter(func(row r.Term) r.Term {
			return row.Field(docfmt.Sequence).Default(nil).TypeOf().Eq("STRING").
				And(row.Field(docfmt.SequenceAt).Default(nil).TypeOf().Eq("NUMBER"))
		})}
	})
	var got struct {
		Read int           `rethinkdb:"read"`
		Rows []sequenceRow `rethinkdb:"rows"`
	}
	if err := t.ReadOne(ctx, term, &got); err != nil {
		return nil, false, err
	}
	slices.SortFunc(got.Rows, sequenceRow.compare)
	return got.Rows, got.Read > most, nil
}

// countSequences counts rows (in IndexSequence's order) by key: the first of a key holds
// it.
func countSequences(rows []sequenceRow) map[string]SequenceCount {
	counts := make(map[string]SequenceCount)
	for _, row := range rows {
		key, _ := row.Sequence.(string)
		id, _ := row.ID.(string)
		status, _ := row.Status.(string)
		c, seen := counts[key]
		if !seen {
			c.Head, c.HeadStatus = id, job.Status(status)
		}
		switch status {
		case string(job.Waiting):
			c.Waiting++
		case string(job.Active):
			c.Active++
		case string(job.Failed):
			c.Failed++
		}
		counts[key] = c
	}
	return counts
}

// sequenceRow is a job of a sequence as SequenceCounts reads it.
type sequenceRow struct {
	ID       any `rethinkdb:"id"`
	Sequence any `rethinkdb:"rjqSequence"`
	At       any `rethinkdb:"rjqSequenceAt"`
	Status   any `rethinkdb:"status"`
}

// compare orders rows as IndexSequence does: by key, place, id (those the index holds: a
// string key, a number place).
func (a sequenceRow) compare(b sequenceRow) int {
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) float64 { f, _ := v.(float64); return f }
	return cmp.Or(cmp.Compare(str(a.Sequence), str(b.Sequence)), cmp.Compare(num(a.At), num(b.At)), cmp.Compare(str(a.ID), str(b.ID)))
}
