package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Sequences (job.SetSequence): a job of a sequence runs only while it is the first of its
// key in IndexSequence (the unfinished jobs of the key, in the order they were added:
// SequenceHeads), and while its run holds the key's one running slot (SequenceSlot, taken
// like a group's). The first alone keeps the order, and keeps a failed job that will be
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
	terms := make(map[string]any, len(keys))
	for _, k := range keys {
		terms[k] = t.Term().Between([]any{k, r.MinVal, r.MinVal}, []any{k, r.MaxVal, r.MaxVal}, r.BetweenOpts{Index: IndexSequence}).
			OrderBy(r.OrderByOpts{Index: IndexSequence}).Limit(1).CoerceTo("array")
	}
	var got map[string][]map[string]any
	if err := t.ReadOne(ctx, r.Expr(terms), &got); err != nil {
		if msg := err.Error(); strings.Contains(msg, "Index `"+IndexSequence+"` was not found") ||
			strings.Contains(msg, "before its construction was finished") {
			return nil, fmt.Errorf("queue %s: %w", t.Name, ErrNoSequenceIndex)
		}
		return nil, fmt.Errorf("queue %s: read the first job of each sequence: %w", t.Name, err)
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
	HeadStatus string
}

// SequenceCounts reads, through IndexSequence, at most most of the unfinished jobs of
// every sequence (only their key, id and status) and counts them by key; partial is true
// when there were more, and the counts are of those read. A table without the index (no
// job of a sequence was ever added) has none; one whose index is not built yet says so
// with ErrNoSequenceIndex. Both are one query.
func (t *Table) SequenceCounts(ctx context.Context, most int) (counts map[string]SequenceCount, partial bool, err error) {
	read := t.Term().Between(r.MinVal, r.MaxVal, r.BetweenOpts{Index: IndexSequence}).
		OrderBy(r.OrderByOpts{Index: IndexSequence}).Limit(most+1).Pluck("id", docfmt.Sequence, "status").CoerceTo("array")
	// No index: no job of a sequence was ever added (asked first rather than told by an
	// error, whose text servers word differently).
	term := r.Branch(t.Term().IndexList().Contains(IndexSequence), read, r.Expr([]any{}))
	var rows []struct {
		ID       any `rethinkdb:"id"`
		Sequence any `rethinkdb:"rjqSequence"`
		Status   any `rethinkdb:"status"`
	}
	if err := t.ReadAll(ctx, term, &rows); err != nil {
		if strings.Contains(err.Error(), "before its construction was finished") {
			return nil, false, fmt.Errorf("queue %s: %w", t.Name, ErrNoSequenceIndex)
		}
		return nil, false, fmt.Errorf("queue %s: count the jobs of sequences: %w", t.Name, err)
	}
	partial = len(rows) > most
	rows = rows[:min(len(rows), most)]
	counts = make(map[string]SequenceCount)
	for _, row := range rows {
		key, _ := row.Sequence.(string)
		id, _ := row.ID.(string)
		status, _ := row.Status.(string)
		c, seen := counts[key]
		if !seen {
			c.Head, c.HeadStatus = id, status
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
	return counts, partial, nil
}
