package processor

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// When Stop gives up waiting for the runs (its context ended), it cancels their handlers'
// contexts with its cause. A run whose handler then returns short (stoppedShort), and a
// job claimed as Stop gave up and never started, did not fail: Stop hands its job back,
// waiting again at once with a "worker stopped" log entry and no retry spent, and gives
// its running slots back, so that another worker takes it at once rather than after its
// lease, as after a crash. The outcomes of runs that ended before and were not written
// yet are written in the same write. Stop waits handBackWait at most for the cancelled
// handlers to return, and handBackWrite at most for the write: a handler still running
// then (one that ignores its context) leaves its job active, for its lease to end, as a
// crash does; so does a write that fails.

const (
	handBackWait  = time.Second
	handBackWrite = 5 * time.Second
)

// handBack writes back the jobs of the runs Stop cut off short, and every outcome not
// written yet, once the processor's loops have ended.
func (p *Processor) handBack() {
	wait, cancel := context.WithTimeout(context.Background(), handBackWait)
	_ = p.act.waitRuns(wait)
	cancel()
	outs := p.comp.drain()
	if len(outs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackWrite)
	defer cancel()
	if err := p.comp.writeIn(ctx, outs); err != nil {
		p.cfg.Log.Warn("writing outcomes and handing jobs back as the queue stopped failed: their jobs stay active until their leases end", "jobs", len(outs), "err", err)
	}
}

// handBackUnstarted hands back jobs claimed as Stop gave up waiting, which never ran.
func (e *executor) handBackUnstarted(jobs []*job.Job) {
	for _, j := range jobs {
		rn := &run{job: j, claimed: *j}
		rn.leaseEnd.Store(j.DateEnable.UnixNano())
		o := e.handedBack(rn)
		e.p.act.update(func(a *activity) { a.pending++ })
		e.p.comp.add(o)
	}
}

// drain takes every outcome not written: those queued, and those of a write that Stop cut
// short, which may have landed (they are written as retries).
func (c *completer) drain() []*outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.inflight {
		o.tries++
	}
	outs := append(c.inflight, c.outs...)
	c.inflight, c.outs = nil, nil
	return outs
}

// waitRuns waits until no run is under way, or ctx ends.
func (a *activity) waitRuns(ctx context.Context) error {
	for {
		running, _, changed := a.state()
		if running == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
