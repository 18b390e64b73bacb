package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The claim write switches candidates to active in one update of one getAll. Each
// document's change is a compare-and-set: only while the job is as the candidate read saw
// it (same status, processCount and retryCount: nobody claimed, failed or reanimated it
// since) and still due by the server's clock does it become active in this queue's name,
// with the log entry "Job retrieved and active", dateStarted the claim's time and
// dateEnable the end of its lease (see LeaseEnd). Times are not compared for equality: one
// written by another client need not come back bit for bit after a round trip through
// this driver's encoding, and such a claim would never match (measured with jobs the
// Node.js library added).
//
// The write asks for every document's change, unchanged ones included ("always"): a
// claim whose answer was lost on a connection error is sent again by the driver, and the
// second try finds the job already active. The claim's own stamp (this queue's id, the
// processCount it set and its dateStarted) tells that it won the first time, without a
// second query.

// Claim is the compare-and-set that makes one candidate active in this queue's name.
type Claim struct {
	ID string
	// Status, ProcessCount and RetryCount are the job's as the candidate was read.
	Status       job.Status
	ProcessCount int
	RetryCount   int
	// At is the claim's time, stored as dateStarted, and its stamp.
	At time.Time
	// LeaseEnd is stored as dateEnable: when the run may be taken for a crashed one.
	LeaseEnd time.Time
	// entry and trunc are the log entries the claim appends.
	entry, trunc map[string]any
}

// NewClaim is the claim of candidate j at at, with the run's lease ending at leaseEnd.
func (t *Table) NewClaim(j *job.Job, at, leaseEnd time.Time) Claim {
	claimed := *j
	e := WithoutData(NewLog(&claimed, t.QueueID, nil, job.MessageActive, job.Information, job.Active))
	e.Date = at
	return Claim{
		ID: j.ID, Status: j.Status, ProcessCount: j.ProcessCount, RetryCount: j.RetryCount,
		At: at, LeaseEnd: leaseEnd,
		entry: LogDocument(e),
		trunc: LogDocument(TruncatedLog(&claimed, t.QueueID, t.LimitJobLogs, job.Active)),
	}
}

// ClaimResult is what a claim write did.
type ClaimResult struct {
	// Claimed are the jobs the claim won, attached to the store, in no particular order.
	Claimed []*job.Job
	// Unreadable are jobs the claim won whose stored document this library cannot read:
	// they stay active, for the Master's review, and Errors says why, by id.
	Unreadable map[string]error
	// Missed are the candidates the claim did not win: another queue took them first, or
	// they changed since they were read.
	Missed []string
}

// spec is what the update compares and sets for claim c.
func (t *Table) spec(c Claim) map[string]any {
	return map[string]any{
		"status": string(c.Status),
		"pc":     c.ProcessCount,
		"rc":     c.RetryCount,
		"set": map[string]any{
			docfmt.Status:       string(job.Active),
			docfmt.DateStarted:  c.At,
			docfmt.DateEnable:   c.LeaseEnd,
			docfmt.QueueID:      t.QueueID,
			docfmt.ProcessCount: c.ProcessCount + 1,
		},
		"entry": c.entry,
		"trunc": c.trunc,
	}
}

// claimTerm is the update that applies claims.
func (t *Table) claimTerm(claims []Claim) r.Term {
	specs := make(map[string]any, len(claims))
	keys := make([]any, len(claims))
	for i, c := range claims {
		specs[c.ID] = t.spec(c)
		keys[i] = c.ID
	}
	// Bound once with Do: an object literal in the update function would be built again
	// for every document and every use.
	return r.Expr(specs).Do(func(specs r.Term) r.Term {
		return t.Term().GetAll(keys...).Update(func(row r.Term) any {
			c := specs.Field(row.Field(docfmt.ID))
			unchanged := row.Field(docfmt.Status).Default(nil).Eq(c.Field("status")).
				And(row.Field(docfmt.ProcessCount).Default(nil).Eq(c.Field("pc"))).
				And(row.Field(docfmt.RetryCount).Default(nil).Eq(c.Field("rc"))).
				And(row.Field(docfmt.DateEnable).Default(nil).Le(r.Now()))
			return r.Branch(unchanged, c.Field("set").Merge(map[string]any{
				docfmt.Log: t.AppendLog(row.Field(docfmt.Log), c.Field("entry"), c.Field("trunc")),
			}), nil)
		}, r.UpdateOpts{ReturnChanges: "always"})
	})
}

// Claim applies claims in one write and sorts out what it won.
func (t *Table) Claim(ctx context.Context, s Store, claims []Claim) (ClaimResult, error) {
	var res WriteResult
	if err := t.ReadOne(ctx, t.claimTerm(claims), &res); err != nil {
		return ClaimResult{}, fmt.Errorf("queue %s: claim jobs: %w", t.Name, err)
	}
	byID := make(map[string]Claim, len(claims))
	for _, c := range claims {
		byID[c.ID] = c
	}
	out := ClaimResult{}
	won := make(map[string]bool, len(claims))
	for _, ch := range res.Changes {
		doc, _ := ch.NewValue.(map[string]any)
		id, _ := doc[docfmt.ID].(string)
		c, ok := byID[id]
		if !ok || !t.wonBy(doc, c) {
			continue
		}
		won[id] = true
		j, err := FromDocument(s, doc)
		if err != nil {
			if out.Unreadable == nil {
				out.Unreadable = make(map[string]error)
			}
			out.Unreadable[id] = err
			continue
		}
		out.Claimed = append(out.Claimed, j)
	}
	for _, c := range claims {
		if !won[c.ID] {
			out.Missed = append(out.Missed, c.ID)
		}
	}
	return out, nil
}

// wonBy reports whether the stored doc holds claim c: active in this queue's name, in
// the run c made, started at c's time.
func (t *Table) wonBy(doc map[string]any, c Claim) bool {
	pc, _ := docfmt.Number(doc[docfmt.ProcessCount])
	started, _ := doc[docfmt.DateStarted].(time.Time)
	return doc[docfmt.Status] == string(job.Active) && doc[docfmt.QueueID] == t.QueueID &&
		int(pc) == c.ProcessCount+1 && started.Equal(c.At)
}
