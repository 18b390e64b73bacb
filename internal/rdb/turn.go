package rdb

import (
	"context"
	"fmt"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A job's turn in its sequence, told by the job ahead of it. Asking IndexSequence which job
// of a key comes first (SequenceHeads) costs a range read a key, and on RethinkDB 2.4.4 a
// range read costs about 0.6–0.8 ms of server CPU however little it returns, where reading
// fifty documents by id in one getAll costs about 0.02 ms each: a claim of fifty jobs of
// fifty sequences spent some 38 ms asking. So AddJob stamps on each job of a sequence the
// id of the job that was last in it then (docfmt.SequencePrev, from SequenceTails: the
// range reads move to the add, one a key and call, whatever the number of jobs of the key
// in it), and a claim reads those jobs by id (ReadSequenceJobs) and asks the index only
// when they cannot tell (TurnOf).

// SequenceTail is the unfinished job of a sequence added last, as SequenceTails reads
// it.
type SequenceTail struct {
	// ID is the job's id; "" for a key without an unfinished job.
	ID string
	// Waiting is the job's dateEnable while it waits (its status waiting, its dateEnable a
	// time); zero otherwise.
	Waiting time.Time
}

// SequenceTails returns, for each key, its unfinished job added last (the last in
// IndexSequence's order), with an empty ID for a key without one: what AddJob stamps as
// the job ahead of the first job of the key it adds. ErrNoSequenceIndex when the index is
// missing or being built.
func (t *Table) SequenceTails(ctx context.Context, keys []string) (map[string]SequenceTail, error) {
	if len(keys) == 0 {
		return map[string]SequenceTail{}, nil
	}
	var got map[string][]map[string]any
	shape := func(end r.Term) r.Term { return end.Pluck(docfmt.ID, docfmt.Status, docfmt.DateEnable) }
	if err := t.keyEnds(ctx, keys, r.Desc(IndexSequence), shape, "last", &got); err != nil {
		return nil, err
	}
	out := make(map[string]SequenceTail, len(keys))
	for _, k := range keys {
		out[k] = SequenceTail{}
		if docs := got[k]; len(docs) > 0 {
			id, ok := docs[0][docfmt.ID].(string)
			if !ok {
				// A document written by hand with an id of another type: no id to name.
				return nil, fmt.Errorf("queue %s: the last job of sequence %s has an id of type %T", t.Name, errtext.Key(k), docs[0][docfmt.ID])
			}
			tail := SequenceTail{ID: id}
			if at, ok := docs[0][docfmt.DateEnable].(time.Time); ok && docs[0][docfmt.Status] == string(job.Waiting) {
				tail.Waiting = at
			}
			out[k] = tail
		}
	}
	return out, nil
}

// keyEnds reads into dst, for each key, an array of at most one element: shape of the
// key's first job in IndexSequence read in order (the index's order, or r.Desc of it for
// the last); which ("first", "last") names it in an error. One range read a key, in one
// query.
func (t *Table) keyEnds(ctx context.Context, keys []string, order any, shape func(r.Term) r.Term, which string, dst any) error {
	terms := make(map[string]any, len(keys))
	for _, k := range keys {
		terms[k] = shape(t.Term().Between([]any{k, r.MinVal, r.MinVal}, []any{k, r.MaxVal, r.MaxVal}, r.BetweenOpts{Index: IndexSequence}).
			OrderBy(r.OrderByOpts{Index: order}).Limit(1)).CoerceTo("array")
	}
	if err := t.ReadOne(ctx, r.Expr(terms), dst); err != nil {
		if NoSequenceIndex(err) {
			return fmt.Errorf("queue %s: %w", t.Name, ErrNoSequenceIndex)
		}
		return fmt.Errorf("queue %s: read the %s job of each sequence: %w", t.Name, which, err)
	}
	return nil
}

// NoSequenceIndex reports whether err says that IndexSequence is missing or not built yet.
func NoSequenceIndex(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Index `"+IndexSequence+"` was not found") || strings.Contains(msg, "before its construction was finished")
}

// SequenceJob is a job of a sequence as a claim reads it to tell another's turn: its
// status, key and place as stored.
type SequenceJob struct {
	Status job.Status
	Key    string
	// At is the job's place; ok false when it is not a number.
	At   float64
	AtOK bool
}

// ReadSequenceJobs reads the jobs of ids (by primary key, on the primary: one read however
// many), by id; an id the table does not hold is left out.
func (t *Table) ReadSequenceJobs(ctx context.Context, ids []string) (map[string]SequenceJob, error) {
	if len(ids) == 0 {
		return map[string]SequenceJob{}, nil
	}
	var rows []sequenceRow
	if err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Pluck(sequenceFields...), &rows); err != nil {
		return nil, fmt.Errorf("queue %s: read the jobs ahead in their sequences: %w", t.Name, err)
	}
	out := make(map[string]SequenceJob, len(rows))
	for _, row := range rows {
		id, _ := row.ID.(string)
		status, _ := row.Status.(string)
		key, _ := row.Sequence.(string)
		at, ok := docfmt.Number(row.At)
		out[id] = SequenceJob{Status: job.Status(status), Key: key, At: at, AtOK: ok}
	}
	return out, nil
}

// Turn is what a claim knows of a job's turn in its sequence (TurnOf).
type Turn int

const (
	// TurnUnknown: only IndexSequence can tell (SequenceHeads).
	TurnUnknown Turn = iota
	// TurnFirst: the job comes first in its sequence.
	TurnFirst
	// TurnWaits: the job ahead of it runs.
	TurnWaits
)

// SequencePrev returns the id AddJob stamped on j as the job ahead of it in its sequence
// ("" for none), and false when j has no such stamp (a job added by an earlier version of
// this library, or written otherwise).
func SequencePrev(j *job.Job) (string, bool) {
	prev, ok := j.Fields[docfmt.SequencePrev].(string)
	return prev, ok
}

// TurnOf tells j's turn from the job AddJob stamped as ahead of it (SequencePrev), as read
// (prev; found false when the table no longer holds it):
//
//   - no job was ahead of it when it was added: first;
//   - the job ahead is of its key and placed before it: first once that job completed or
//     was terminated (it ran as the first of the sequence, so every job ahead of it had
//     finished); it waits while that job runs;
//   - anything else: unknown, and the index tells. That is so while the job ahead waits
//     or will be retried: the first of the key may then be due, and a claim must take it
//     in this one's place rather than hold the key back (read in claim order, the jobs of
//     one millisecond come by id, so a later job of a key often comes before its first:
//     holding the key there would keep its first from ever being read). So too without a
//     stamp, or with the job ahead removed, cancelled out of turn, or since added again
//     behind it by a unique key.
//
// A place compared, the waits go one way only: no two jobs can wait for each other.
func TurnOf(j *job.Job, prev SequenceJob, found bool) Turn {
	id, stamped := SequencePrev(j)
	switch {
	case !stamped:
		return TurnUnknown
	case id == "":
		return TurnFirst
	case !found || prev.Key != j.Sequence() || !prev.AtOK:
		return TurnUnknown
	}
	at, ok := docfmt.Number(j.Fields[docfmt.SequenceAt])
	if !ok || prev.At >= at {
		return TurnUnknown
	}
	switch prev.Status {
	case job.Completed, job.Terminated:
		return TurnFirst
	case job.Active:
		return TurnWaits
	}
	return TurnUnknown
}
