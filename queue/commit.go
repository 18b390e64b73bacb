package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A commit is the one write the processing loop sends at a time: the outcomes of the runs
// that finished since the last one and the claims of jobs for the free slots (see
// rdb.Commit for how it is written and guarded).

// commitResult is what a commit did, with the candidates it did not claim sorted out.
type commitResult struct {
	rdb.CommitResult
	// Ours are candidates that an earlier try of this write claimed (see lookAgain).
	Ours []map[string]any
}

// commit writes outs and claims the jobs of claims in one update. Candidates it did not
// claim are looked at again: most were taken by another queue first; some are active in
// this queue's name, claimed by an earlier try of the same write whose answer was lost
// and which the driver sent again on a new connection (it does so on a connection error).
func (q *Queue) commit(ctx context.Context, outs []*outcome, claims map[string]any) (commitResult, error) {
	writes := make([]rdb.Outcome, len(outs))
	for i, o := range outs {
		writes[i] = rdb.Outcome{ID: o.rn.claimed.ID, ProcessCount: o.rn.claimed.ProcessCount,
			Set: o.set, Entry: o.entry, Trunc: o.trunc}
	}
	res, err := q.db.Commit(ctx, writes, claims)
	if err != nil {
		return commitResult{}, err
	}
	c := commitResult{CommitResult: res}
	if len(res.Missed) > 0 {
		// Looked at only now, rarely: the answer stands without it, so a failure here is
		// not the commit's.
		if c.Ours, err = q.db.ReadClaimedHere(ctx, res.Missed); err != nil {
			q.log.Warn("looking at candidates a claim left alone failed", "err", err)
		}
	}
	return c, nil
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
		if stamps, err := q.db.ReadStamps(ctx, retried); err == nil {
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
		if err := q.db.DeleteAny(ctx, remove); err != nil {
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
	keys := make(map[string]rdb.ClaimKey, len(res.Claimed))
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
	rdb.SortClaimed(jobs, keys)
	return jobs
}

// adoptLost looks for the claims of a commit whose answer was lost, and runs them.
func (p *processor) adoptLost(ctx context.Context) error {
	q := p.q
	docs, err := q.db.ReadClaimedHere(ctx, p.lost)
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
		q.claimedMetric(1)
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
