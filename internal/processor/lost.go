package processor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Lost claims: a claim whose answer was lost (the connection failed after the write) may
// have landed. The producer looks for its jobs before anything else (adoptLost), and the
// heartbeat renews their leases meanwhile (lostClaims), so that a claim that landed runs
// here, once.

// lostClaim is what claims of one job whose answers were lost would have written: the
// processCount of the latest, their times (a job may be claimed again, and lost again,
// before the first claim is found), and when the last of their leases ends.
type lostClaim struct {
	pc    int
	at    []time.Time
	until time.Time
}

// stamped reports whether t is one of the claims' times, to the millisecond (the most a
// time stored in RethinkDB keeps).
func (lc lostClaim) stamped(t time.Time) bool {
	return slices.ContainsFunc(lc.at, func(at time.Time) bool {
		d := t.Sub(at)
		return d < time.Millisecond && d > -time.Millisecond
	})
}

// lostClaims returns the jobs that claims whose answers were lost may hold, with the
// processCount they would hold them in, for the heartbeat to renew.
func (p *producer) lostClaims() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lostAt) == 0 {
		return nil
	}
	out := make(map[string]int, len(p.lostAt))
	for id, lc := range p.lostAt {
		out[id] = lc.pc
	}
	return out
}

// adoptLost looks for the claims of a write whose answer was lost, and runs them. A job
// active here that another claim of this queue won since (it is running, or its outcome
// is not written yet, or its dateStarted is not the lost claim's) is not the lost claim's
// and is left alone.
func (p *producer) adoptLost(ctx context.Context) error {
	pr := p.p
	// An id may be there twice (claimed and lost again before the first was found).
	slices.Sort(p.lost)
	p.lost = slices.Compact(p.lost)
	jobs, err := pr.cfg.Store.ReadClaimedHere(ctx, pr.cfg.Jobs, p.lost)
	if err != nil {
		return fmt.Errorf("queue %s: look for jobs a lost write claimed: %w", pr.cfg.Name, err)
	}
	mine := pr.exec.running()
	for _, rn := range pr.comp.unwritten() {
		mine[rn.claimed.ID] = rn.claimed.ProcessCount
	}
	now := time.Now()
	found := make(map[string]bool, len(jobs))
	var adopt []*job.Job
	p.mu.Lock()
	for _, j := range jobs {
		lc, watched := p.lostAt[j.ID]
		if _, ok := mine[j.ID]; ok || found[j.ID] || watched && !lc.stamped(j.DateStarted) {
			found[j.ID] = true
			continue
		}
		found[j.ID] = true
		pr.cfg.Log.Info("running a job whose claim's answer was lost", "job", j.ID)
		adopt = append(adopt, j)
	}
	for _, id := range p.lost {
		if lc, ok := p.lostAt[id]; ok && !found[id] && now.Before(lc.until) {
			// Not there yet: the claim may land until its lease would end (then the
			// review takes the job back in any case).
			p.later = append(p.later, id)
			continue
		}
		delete(p.lostAt, id)
	}
	p.mu.Unlock()
	if len(p.later) > 0 {
		p.laterAt = now.Add(lostRecheck)
	}
	p.lost = nil
	p.start(adopt)
	return nil
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lostRecheck is how often the loop looks again for a lost claim it has not found.
const lostRecheck = time.Second

// recheckWait is the wait until the loop looks again for lost claims, -1 when there are
// none to look for.
func (p *producer) recheckWait() time.Duration {
	if len(p.later) == 0 {
		return -1
	}
	return max(time.Until(p.laterAt), 0)
}

// findLost looks for the jobs of claims whose answers were lost, and of inserts that
// claimed and lost theirs, when there are any to look for (again).
func (p *producer) findLost(ctx context.Context) error {
	p.mu.Lock()
	p.lost, p.unsure = append(p.lost, p.unsure...), nil
	p.mu.Unlock()
	if len(p.later) > 0 && !time.Now().Before(p.laterAt) {
		p.lost, p.later = append(p.lost, p.later...), nil
	}
	if len(p.lost) == 0 {
		return nil
	}
	return p.adoptLost(ctx)
}
