package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The outcomes of runs are written in batches, one update of one getAll for all the
// outcomes ready: on a real RethinkDB a write costs one flush plus a little per document,
// so outcomes that finish close together share a flush.
//
// Each outcome is guarded by ownership: it applies only while the job is still active in
// the run that made its processCount, so a job cancelled, failed by a review or claimed
// again meanwhile is left as the other party left it. Nothing in the update can raise an
// error for one document (a log that is not an array is replaced), so the write cannot
// fail half-way for a reason of one job's.
//
// The write returns counts, not documents. When it replaced fewer than it was given,
// the jobs' stamps are read: an outcome whose job holds its dateFinished in this queue's
// name landed (by an earlier try of the write whose answer was lost, which the driver
// sends again on a connection error); the others found their job changed elsewhere.

// Outcome is the write of one run's outcome.
type Outcome struct {
	ID string
	// ProcessCount is the run's claim: the write applies only while the job is active in it.
	ProcessCount int
	Status       job.Status
	// DateFinished is the outcome's time, stored as dateFinished, and its stamp.
	DateFinished time.Time
	// DateEnable, RetryCount and Progress are set when not nil.
	DateEnable *time.Time
	RetryCount *int
	Progress   *float64
	// Entry and Trunc are the log entry the outcome appends and the truncation entry that
	// goes with it.
	Entry, Trunc job.LogEntry
}

// set is what the update sets for o, besides the log.
func (t *Table) set(o Outcome) map[string]any {
	m := map[string]any{
		docfmt.Status:       string(o.Status),
		docfmt.DateFinished: o.DateFinished,
		docfmt.QueueID:      t.QueueID,
	}
	if o.DateEnable != nil {
		m[docfmt.DateEnable] = *o.DateEnable
	}
	if o.RetryCount != nil {
		m[docfmt.RetryCount] = *o.RetryCount
	}
	if o.Progress != nil {
		m[docfmt.Progress] = *o.Progress
	}
	return m
}

// finishTerm is the update that writes outs.
func (t *Table) finishTerm(outs []Outcome) r.Term {
	specs := make(map[string]any, len(outs))
	keys := make([]any, len(outs))
	for i, o := range outs {
		specs[o.ID] = map[string]any{"pc": o.ProcessCount, "set": t.set(o), "entry": LogDocument(o.Entry), "trunc": LogDocument(o.Trunc)}
		keys[i] = o.ID
	}
	return r.Expr(specs).Do(func(specs r.Term) r.Term {
		return t.Term().GetAll(keys...).Update(func(row r.Term) any {
			o := specs.Field(row.Field(docfmt.ID))
			log := row.Field(docfmt.Log).Default(nil)
			return r.Branch(ownedBy(row, o.Field("pc")), o.Field("set").Merge(map[string]any{
				docfmt.Log: r.Branch(log.TypeOf().Eq("ARRAY"),
					t.AppendLog(log, o.Field("entry"), o.Field("trunc")),
					r.Expr([]any{}).Append(o.Field("entry"))),
			}), nil)
		})
	})
}

// Finish writes outs in one update and returns the ids of those that landed; the others
// found their job changed elsewhere.
func (t *Table) Finish(ctx context.Context, outs []Outcome) (done []string, err error) {
	var res WriteResult
	if err := t.ReadOne(ctx, t.finishTerm(outs), &res); err != nil {
		return nil, fmt.Errorf("queue %s: write outcomes: %w", t.Name, err)
	}
	if res.Replaced == len(outs) {
		done = make([]string, len(outs))
		for i, o := range outs {
			done[i] = o.ID
		}
		return done, nil
	}
	return t.Landed(ctx, outs)
}

// Landed returns the ids of outs whose job holds the outcome: after a write that changed
// fewer jobs than it was given, or whose answer was lost.
func (t *Table) Landed(ctx context.Context, outs []Outcome) ([]string, error) {
	ids := make([]string, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	stamps, err := t.ReadStamps(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("queue %s: read back outcomes: %w", t.Name, err)
	}
	var done []string
	for _, o := range outs {
		d, ok := stamps[o.ID]
		if ok && d.QueueID == t.QueueID && d.DateFinished != nil && d.DateFinished.Equal(o.DateFinished) {
			done = append(done, o.ID)
		}
	}
	return done, nil
}

// StampedDoc is what tells whether a job holds a given outcome or claim of this queue.
type StampedDoc struct {
	ID           string     `rethinkdb:"id"`
	Status       string     `rethinkdb:"status"`
	QueueID      string     `rethinkdb:"queueId"`
	ProcessCount float64    `rethinkdb:"processCount"`
	DateFinished *time.Time `rethinkdb:"dateFinished"`
}

// ReadStamps reads the stamps of the jobs ids, on the primary.
func (t *Table) ReadStamps(ctx context.Context, ids []string) (map[string]StampedDoc, error) {
	var docs []map[string]any
	err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Pluck(docfmt.ID, docfmt.Status, docfmt.QueueID, docfmt.ProcessCount, docfmt.DateFinished), &docs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]StampedDoc, len(docs))
	for _, doc := range docs {
		// Read field by field: a document of the wrong shape must not fail the others.
		d := StampedDoc{}
		d.ID, _ = doc[docfmt.ID].(string)
		d.Status, _ = doc[docfmt.Status].(string)
		d.QueueID, _ = doc[docfmt.QueueID].(string)
		d.ProcessCount, _ = docfmt.Number(doc[docfmt.ProcessCount])
		if at, ok := doc[docfmt.DateFinished].(time.Time); ok {
			d.DateFinished = &at
		}
		byID[d.ID] = d
	}
	return byID, nil
}

// ReadClaimedHere reads the jobs of ids that are active in this queue's name, for the
// claims of a write whose answer was lost.
func (t *Table) ReadClaimedHere(ctx context.Context, s Store, ids []string) ([]*job.Job, error) {
	term := t.Term().GetAll(Anys(ids)...).Filter(map[string]any{docfmt.Status: string(job.Active), docfmt.QueueID: t.QueueID})
	var docs []map[string]any
	if err := t.ReadAll(ctx, term, &docs); err != nil {
		return nil, err
	}
	var jobs []*job.Job
	for _, doc := range docs {
		if j, err := FromDocument(s, doc); err == nil {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}
