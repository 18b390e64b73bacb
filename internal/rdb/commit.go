package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A commit is the one write the processing loop sends at a time: the outcomes of the runs
// that finished since the last one, and the claim of the jobs for the slots they and
// others freed, all in one update of one getAll. On a real RethinkDB a write query costs
// one flush (about 1.5 ms with hard durability) plus about 0.1 ms per document, so
// outcomes that finish close together are group-committed: an outcome waits at most for
// the commit already in flight, and a busy queue writes many outcomes and claims many
// jobs per flush.
//
// Each outcome is guarded by ownership: it is applied only while the job is still active
// in the run that made its processCount, so a job cancelled, failed by a review or claimed
// again meanwhile is left as the other party left it. Each claim is a compare-and-set:
// it applies only while the job is as the candidate read saw it (and still due), which the client checked
// could be processed. Nothing in the update can raise an error for one document (a log
// that is not an array is replaced), so the write cannot fail half-way for a reason
// unrelated to it.
//
// When a commit fails, whether it landed is unknown. Its outcomes are written again: the
// ownership guard makes a second write of an outcome that did land a no-op, and its stamp
// (dateFinished, queueId) tells that it was this outcome's, so its event is raised once.
// Its candidates are read again: those found active in this queue's name and not running
// here were claimed by the lost write, and run.

// CommitResult is what a commit did.
type CommitResult struct {
	// Done are the ids of the outcomes written.
	Done []string
	// Claimed are the jobs claimed, with their place in the index before the claim.
	Claimed []ClaimedDoc
	// Missed are the candidates the write did not claim: most were taken by another queue
	// first; some may be active in this queue's name, claimed by an earlier try of the
	// same write whose answer was lost (see ReadClaimedHere).
	Missed []string
	// Errors and FirstError report per-document write errors, which the update is built
	// never to raise.
	Errors     int
	FirstError string
}

// ClaimedDoc is a job a commit claimed.
type ClaimedDoc struct {
	Job map[string]any
	Key ClaimKey
}

// Outcome is the write of one run's outcome: applied only while the job is still active
// in the run that made ProcessCount; Set holds the top-level fields it sets, Entry the log
// entry it appends (Trunc the truncation entry that goes with it).
type Outcome struct {
	ID           string
	ProcessCount int
	Set          map[string]any
	Entry, Trunc map[string]any
}

// commitTerm writes outs and claims the jobs of claims (by id, see ClaimSpec) in one
// update, which returns the changes as they are: sorting them out is left to the client,
// where it costs nothing.
func (t *Table) commitTerm(outs []Outcome, claims map[string]any) r.Term {
	specs := make(map[string]any, len(outs)+len(claims))
	keys := make([]any, 0, len(outs)+len(claims))
	for _, o := range outs {
		id := o.ID
		specs[id] = map[string]any{"pc": o.ProcessCount, "set": o.Set, "entry": o.Entry, "trunc": o.Trunc}
		keys = append(keys, id)
	}
	for id, c := range claims {
		if _, ok := specs[id]; !ok {
			specs[id] = c
			keys = append(keys, id)
		}
	}
	// Bound once with Do: an object literal in the update function would be built again
	// for every document and every use (measured: 10 ms per outcome in a commit of ten).
	return r.Expr(specs).Do(func(specs r.Term) r.Term {
		return t.Term().GetAll(keys...).Update(func(row r.Term) any {
			spec := specs.Field(row.Field("id"))
			return r.Branch(spec.HasFields("claim"), t.claimUpdate(row, spec), t.outcomeUpdate(row, spec))
		}, r.UpdateOpts{ReturnChanges: true})
	})
}

// outcomeUpdate applies the outcome o (an object term of commitTerm) to row if the run
// still owns the job.
func (t *Table) outcomeUpdate(row, o r.Term) r.Term {
	log := row.Field("log").Default(nil)
	return r.Branch(ownedBy(row, o.Field("pc")), o.Field("set").Merge(map[string]any{
		"log": r.Branch(log.TypeOf().Eq("ARRAY"),
			t.AppendLog(log, o.Field("entry"), o.Field("trunc")),
			r.Expr([]any{}).Append(o.Field("entry"))),
	}), nil)
}

// Commit writes outs and claims the jobs of claims (by id, see ClaimSpec) in one update,
// and sorts out what it did.
func (t *Table) Commit(ctx context.Context, outs []Outcome, claims map[string]any) (CommitResult, error) {
	var res WriteResult
	if err := t.ReadOne(ctx, t.commitTerm(outs, claims), &res); err != nil {
		what := "write outcomes and claim jobs"
		switch {
		case len(claims) == 0:
			what = "write outcomes"
		case len(outs) == 0:
			what = "claim jobs"
		}
		return CommitResult{}, fmt.Errorf("queue %s: %s: %w", t.Name, what, err)
	}
	isOutcome := make(map[string]bool, len(outs))
	for _, o := range outs {
		isOutcome[o.ID] = true
	}
	c := CommitResult{Errors: res.Errors, FirstError: res.FirstError}
	claimed := make(map[string]bool, len(claims))
	for _, ch := range res.Changes {
		doc, ok := ch.NewValue.(map[string]any)
		if !ok {
			continue
		}
		id, _ := doc["id"].(string)
		if isOutcome[id] {
			c.Done = append(c.Done, id)
			continue
		}
		old, _ := ch.OldValue.(map[string]any)
		key := ClaimKey{DateEnable: timeOf(old["dateEnable"]), DateCreated: timeOf(old["dateCreated"])}
		key.Priority, _ = old["priority"].(float64)
		c.Claimed = append(c.Claimed, ClaimedDoc{Job: doc, Key: key})
		claimed[id] = true
	}
	for id := range claims {
		if !claimed[id] && !isOutcome[id] {
			c.Missed = append(c.Missed, id)
		}
	}
	return c, nil
}

func timeOf(v any) time.Time {
	t, _ := v.(time.Time)
	return t
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
	var docs []StampedDoc
	err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Pluck("id", "status", "queueId", "processCount", "dateFinished"), &docs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]StampedDoc, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	return byID, nil
}

// ReadClaimedHere reads the jobs of ids that are active in this queue's name, for the
// claims of a commit whose answer was lost.
func (t *Table) ReadClaimedHere(ctx context.Context, ids []string) ([]map[string]any, error) {
	var docs []map[string]any
	err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Filter(map[string]any{"status": string(job.Active), "queueId": t.QueueID}), &docs)
	return docs, err
}
