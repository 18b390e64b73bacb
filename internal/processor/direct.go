package processor

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A queue that adds jobs while it is idle may insert them already claimed and run them at
// once (see queue.AddJob): the job's insert is then its only write before the handler
// starts, where a waiting job needs the insert and a claim query after it (on RethinkDB
// 2.4.4 with hard durability, about 6 ms each). Only an idle queue does so, one that
// knows of no claimable job: its last read came back short, and it holds no hint, no
// buffered job and no due read, and it applies no limit. No waiting job is then passed
// over, and the job goes where a claim would have put it: the queue that adds a job is
// the first to claim it.

// Reserve reserves n slots for jobs the caller inserts already claimed, and reports
// whether it did: only when the queue is idle (above) and has n slots free. Every
// reservation ends with Started or Unreserve; until then, Pause and Stop wait for it as
// for a claim under way.
func (p *Processor) Reserve(n int) bool {
	return p.reserve(n, reserveWait)
}

// reserve is Reserve, waiting up to wait for a claim under way to end.
func (p *Processor) reserve(n int, wait time.Duration) bool {
	if n < 1 || !p.cfg.Feed {
		return false
	}
	// A claim under way on an idle queue (a read that finds nothing, in about a
	// millisecond) is waited for: without that, a job added while it reads would be
	// inserted waiting, for the claim after it.
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		if !p.prod.knowsNothing(time.Now()) {
			return false
		}
		ok, retry := p.act.reserve(n, p.cfg.Concurrency())
		if ok {
			break
		}
		if retry == nil {
			return false
		}
		select {
		case <-retry:
		case <-timeout.C:
			return false
		case <-p.hard.Done():
			return false
		}
	}
	// Reserve before looking at the pause, as beginClaim does, so that a Pause either
	// sees the reservation and waits for it, or is seen here.
	if !p.cfg.Claiming() || p.hard.Err() != nil {
		p.act.update(func(a *activity) { a.reserved -= n })
		return false
	}
	return true
}

// reserveWait bounds how long Reserve waits for a claim under way to end.
const reserveWait = 50 * time.Millisecond

// reserve takes n of conc slots for Reserve when no claim is under way; when one is and
// the slots are free, it returns the channel closed at the next change, to try again.
func (a *activity) reserve(n, conc int) (ok bool, retry <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if conc-a.running-a.reserved < n {
		return false, nil
	}
	if a.claiming {
		return false, a.changed
	}
	a.reserved += n
	close(a.changed)
	a.changed = make(chan struct{})
	return true, nil
}

// Started hands jobs inserted already claimed to the executor, and ends the reservation
// of n slots that Reserve made for them. Slots reserved for jobs that were not claimed
// (fewer jobs than n) are free again: the producer is woken for them, since a wake that
// came while they were reserved found them taken (a child released, not claimed, wakes
// it before its release's reservation ends).
func (p *Processor) Started(n int, jobs []*job.Job) {
	p.prod.start(jobs)
	p.act.update(func(a *activity) { a.reserved -= n })
	if n > len(jobs) {
		p.prod.wake(false)
	}
}

// Unreserve ends the reservation of n slots whose jobs were not inserted. unsure are the
// ids of jobs whose insert may have landed (its answer was lost): the producer looks for
// them before its next claim, as for a claim whose answer was lost.
func (p *Processor) Unreserve(n int, unsure []string) {
	if len(unsure) > 0 {
		p.prod.mu.Lock()
		p.prod.unsure = append(p.prod.unsure, unsure...)
		p.prod.mu.Unlock()
	}
	p.act.update(func(a *activity) { a.reserved -= n })
	p.prod.wake(false)
}

// knowsNothing reports whether the producer knows of no claimable job at now (see
// Reserve).
func (p *producer) knowsNothing(now time.Time) bool {
	p.mu.Lock()
	idle := p.idle && !p.readWanted && len(p.hints) == 0 && len(p.buf) == 0 && len(p.unsure) == 0 &&
		(p.readAt.IsZero() || now.Before(p.readAt))
	p.mu.Unlock()
	if !idle {
		return false
	}
	l := &p.lim
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.none && !l.stale
}
