package queue

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
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

// commitResult is what a commit did.
type commitResult struct {
	// Done are the ids of the outcomes written.
	Done []string
	// Claimed are the jobs claimed, with their place in the index before the claim.
	Claimed []claimedDoc
	// Ours are candidates that an earlier try of this write claimed (see lookAgain).
	Ours []map[string]any
	// Errors and FirstError report per-document write errors, which the update is built
	// never to raise.
	Errors     int
	FirstError string
}

type claimedDoc struct {
	Job map[string]any
	Key claimKey
}

// commitTerm writes outs and claims the jobs of claims (by id, see claimSpec) in one
// update, which returns the changes as they are: sorting them out is left to the client,
// where it costs nothing.
func (q *Queue) commitTerm(outs []*outcome, claims map[string]any) r.Term {
	specs := make(map[string]any, len(outs)+len(claims))
	keys := make([]any, 0, len(outs)+len(claims))
	for _, o := range outs {
		id := o.rn.claimed.ID
		specs[id] = map[string]any{"pc": o.rn.claimed.ProcessCount, "set": o.set, "entry": o.entry, "trunc": o.trunc}
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
		return q.table().GetAll(keys...).Update(func(row r.Term) any {
			spec := specs.Field(row.Field("id"))
			return r.Branch(spec.HasFields("claim"), q.claimUpdate(row, spec), q.outcomeUpdate(row, spec))
		}, r.UpdateOpts{ReturnChanges: true})
	})
}

// outcomeUpdate applies the outcome o (an object term of commitTerm) to row if the run
// still owns the job.
func (q *Queue) outcomeUpdate(row, o r.Term) r.Term {
	log := row.Field("log").Default(nil)
	owned := row.Field("status").Default(nil).Eq(string(job.Active)).
		And(row.Field("processCount").Default(nil).Eq(o.Field("pc")))
	return r.Branch(owned, o.Field("set").Merge(map[string]any{
		"log": r.Branch(log.TypeOf().Eq("ARRAY"),
			q.appendLog(log, o.Field("entry"), o.Field("trunc")),
			r.Expr([]any{}).Append(o.Field("entry"))),
	}), nil)
}

// commit runs commitTerm and sorts out what it did. Candidates it did not claim are looked
// at again (see lookAgain).
func (q *Queue) commit(ctx context.Context, outs []*outcome, claims map[string]any) (commitResult, error) {
	var res writeResult
	if err := q.readOne(ctx, q.commitTerm(outs, claims), &res); err != nil {
		what := "write outcomes and claim jobs"
		switch {
		case len(claims) == 0:
			what = "write outcomes"
		case len(outs) == 0:
			what = "claim jobs"
		}
		return commitResult{}, fmt.Errorf("queue %s: %s: %w", q.cfg.name, what, err)
	}
	isOutcome := make(map[string]bool, len(outs))
	for _, o := range outs {
		isOutcome[o.rn.claimed.ID] = true
	}
	c := commitResult{Errors: res.Errors, FirstError: res.FirstError}
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
		key := claimKey{DateEnable: timeOf(old["dateEnable"]), DateCreated: timeOf(old["dateCreated"])}
		key.Priority, _ = old["priority"].(float64)
		c.Claimed = append(c.Claimed, claimedDoc{Job: doc, Key: key})
		claimed[id] = true
	}
	var missed []string
	for id := range claims {
		if !claimed[id] && !isOutcome[id] {
			missed = append(missed, id)
		}
	}
	if len(missed) > 0 {
		// What the write left alone is looked at only now, rarely: the answer stands
		// without it, so a failure here is not the commit's.
		if err := q.lookAgain(ctx, missed, &c); err != nil {
			q.log.Warn("looking at candidates a claim left alone failed", "err", err)
		}
	}
	return c, nil
}

func timeOf(v any) time.Time {
	t, _ := v.(time.Time)
	return t
}

// lookAgain sorts out candidates a commit did not claim: most were taken by another queue
// first; some are active in this queue's name, claimed by an earlier try of the same
// write whose answer was lost and which the driver sent again on a new connection (it
// does so on a connection error).
func (q *Queue) lookAgain(ctx context.Context, ids []string, c *commitResult) error {
	docs, err := q.readClaimedHere(ctx, ids)
	if err != nil {
		return err
	}
	c.Ours = append(c.Ours, docs...)
	return nil
}

// stampedDoc is what tells whether a job holds a given outcome or claim of this queue.
type stampedDoc struct {
	ID           string     `rethinkdb:"id"`
	Status       string     `rethinkdb:"status"`
	QueueID      string     `rethinkdb:"queueId"`
	ProcessCount float64    `rethinkdb:"processCount"`
	DateFinished *time.Time `rethinkdb:"dateFinished"`
}

// readStamps reads the stamps of the jobs ids, on the primary.
func (q *Queue) readStamps(ctx context.Context, ids []string) (map[string]stampedDoc, error) {
	var docs []stampedDoc
	err := q.readAll(ctx, q.table().GetAll(anys(ids)...).Pluck("id", "status", "queueId", "processCount", "dateFinished"), &docs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]stampedDoc, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	return byID, nil
}

// readClaimedHere reads the jobs of ids that are active in this queue's name, for the
// claims of a commit whose answer was lost.
func (q *Queue) readClaimedHere(ctx context.Context, ids []string) ([]map[string]any, error) {
	var docs []map[string]any
	err := q.readAll(ctx, q.table().GetAll(anys(ids)...).Filter(map[string]any{"status": string(job.Active), "queueId": q.id}), &docs)
	return docs, err
}

// written follows a commit's outcomes: the events of those written, the removal of
// finished jobs when the queue removes them at once, and the outcomes that found their job
// changed elsewhere, or (after a failed commit) already written. It returns the earliest
// dateEnable of the jobs it put back to waiting or failed (for a retry or a repeat),
// which the claim that went with the commit could not see yet; zero when none.
func (p *processor) written(ctx context.Context, outs []*outcome, res commitResult) (again time.Time) {
	q := p.q
	done := make(map[string]bool, len(res.Done))
	for _, id := range res.Done {
		done[id] = true
	}
	var retried []string
	for _, o := range outs {
		if !done[o.rn.claimed.ID] {
			retried = append(retried, o.rn.claimed.ID)
		}
	}
	if len(retried) > 0 {
		// Found changed: by another party, or by an earlier try of this write whose answer
		// was lost (after a failed commit, or one the driver sent again on a connection
		// error). Their stamp tells.
		if stamps, err := q.readStamps(ctx, retried); err == nil {
			for _, o := range outs {
				d, ok := stamps[o.rn.claimed.ID]
				if ok && d.QueueID == q.id && d.DateFinished != nil && d.DateFinished.Equal(o.stamp) {
					done[o.rn.claimed.ID] = true
				}
			}
		}
	}
	var remove []string
	for _, o := range outs {
		id := o.rn.claimed.ID
		if !done[id] {
			q.log.Info("job changed elsewhere while it ran; its outcome is dropped", "job", id)
			continue
		}
		q.emit(Event{Type: o.event, JobID: id, IsRepeating: o.repeating, Err: o.err})
		if st, ok := o.set["status"].(string); ok {
			q.runMetric(o.rn.claimed, job.Status(st), o.stamp)
		}
		if o.terminated != nil {
			p.terminatedHook(o.terminated, o.err)
		}
		if at, ok := o.set["dateEnable"].(time.Time); ok && !o.finished && (again.IsZero() || at.Before(again)) {
			again = at
		}
		if o.finished && q.cfg.removeImmediately() {
			remove = append(remove, id)
		}
	}
	p.mu.Lock()
	p.writing -= len(outs)
	p.changed()
	p.mu.Unlock()
	if len(remove) > 0 {
		q.noteRemovals(remove)
		if _, err := q.write(ctx, q.table().GetAll(anys(remove)...).Delete()); err != nil {
			q.emit(Event{Type: EventError, Err: fmt.Errorf("queue %s: remove finished jobs: %w", q.cfg.name, err)})
			return again
		}
		for _, id := range remove {
			q.emit(Event{Type: EventRemoved, JobID: id})
		}
	}
	return again
}

// decodeClaimed reads the jobs a commit claimed, in processing order. A claimed document
// this library cannot read stays active for the Master's review, reported once.
func (p *processor) decodeClaimed(res commitResult) []*job.Job {
	q := p.q
	jobs := make([]*job.Job, 0, len(res.Claimed))
	keys := make(map[string]claimKey, len(res.Claimed))
	for _, c := range res.Claimed {
		j, err := rdb.FromDocument(q.store(), c.Job)
		if err != nil {
			id, _ := c.Job["id"].(string)
			p.report(id, fmt.Errorf("queue %s: claimed job %s cannot be read; it is left active for the review: %w", q.cfg.name, id, err))
			continue
		}
		jobs = append(jobs, j)
		keys[j.ID] = c.Key
	}
	sortClaimed(jobs, keys)
	return jobs
}

// adoptLost looks for the claims of a commit whose answer was lost, and runs them.
func (p *processor) adoptLost(ctx context.Context) error {
	q := p.q
	docs, err := q.readClaimedHere(ctx, p.lost)
	if err != nil {
		return fmt.Errorf("queue %s: look for jobs a lost write claimed: %w", q.cfg.name, err)
	}
	p.lost = nil
	p.adopt(docs)
	return nil
}

// adopt runs the jobs of docs, active in this queue's name by a claim whose answer was
// lost, unless they run here already.
func (p *processor) adopt(docs []map[string]any) {
	q := p.q
	running := make(map[string]bool)
	p.mu.Lock()
	for rn := range p.running {
		running[rn.claimed.ID] = true
	}
	for _, o := range p.outs {
		running[o.rn.claimed.ID] = true
	}
	p.mu.Unlock()
	for _, doc := range docs {
		j, err := rdb.FromDocument(q.store(), doc)
		if err != nil || running[j.ID] {
			continue
		}
		q.log.Info("running a job whose claim's answer was lost", "job", j.ID)
		q.emit(Event{Type: EventActive, JobID: j.ID})
		p.start(j)
	}
}

// skipFor is how long a document that cannot be claimed is left out of claims before it
// is looked at again (someone may have mended it).
const skipFor = 10 * time.Minute

// maxSkipped bounds the documents left out of claims, and maxReported the ids remembered
// as reported, so that a table full of garbage cannot grow them without end.
const (
	maxSkipped  = 1000
	maxReported = 10000
)

// noteMalformed leaves a due document that cannot be processed out of the next claims,
// and reports it once.
func (p *processor) noteMalformed(id string, err error) {
	if len(p.skip) < maxSkipped {
		p.skip[id] = time.Now().Add(skipFor)
	}
	p.report(id, fmt.Errorf("queue %s: job %s cannot be processed, and is left as it is until it is mended or removed: %w", p.q.cfg.name, id, err))
}

// report raises an error event and logs it, once per job id.
func (p *processor) report(id string, err error) {
	if p.reported[id] {
		return
	}
	if len(p.reported) >= maxReported {
		clear(p.reported)
	}
	p.reported[id] = true
	p.q.log.Warn("job cannot be processed", "job", id, "err", err)
	p.q.emit(Event{Type: EventError, JobID: id, Err: err})
}

// skipList returns the ids claims leave out, dropping expired entries.
func (p *processor) skipList() []string {
	now := time.Now()
	ids := make([]string, 0, len(p.skip))
	for id, until := range p.skip {
		if now.After(until) {
			delete(p.skip, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}
