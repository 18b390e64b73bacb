package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// With heartbeats on, a running job's lease lasts Heartbeat plus a margin from each
// renewal, and beats go every Heartbeat/4 (renewPeriod), in one query for all the
// queue's running jobs older than a period, with the queue's worker entry. So a lease
// never has less than Heartbeat/2 plus the margin left (two periods: a run claimed just
// after a beat is renewed at the second), which is how long a failure that begins at any
// moment may last without costing a second run. The same beat reads the table's live workers,
// which rank the queues for jobs made claimable elsewhere (see producer.go); the first
// beats come sooner, so that queues started together know each other within a second.

// peerBeats are the waits before the first beats after the first one.
var peerBeats = []time.Duration{250 * time.Millisecond, time.Second}

// heartbeat renews the leases of the running jobs and this queue's worker entry every
// renewPeriod until the processor stops; it removes the entry then.
func (p *Processor) heartbeat() {
	if p.cfg.AssertWorkers != nil {
		if err := p.cfg.AssertWorkers(p.hard); err != nil && p.hard.Err() == nil {
			p.cfg.Log.Warn("creating the workers table failed; Workers will not list this queue", "err", err)
		}
	}
	started := time.Now()
	period := renewPeriod(p.cfg.Heartbeat)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.quit:
			p.unregister()
			return
		case <-p.hard.Done():
			p.unregister()
			return
		case <-timer.C:
		}
		wait := period
		if err := p.beat(started); err != nil && p.hard.Err() == nil {
			// Try again soon: the leases of the runs (and of the outcomes not yet
			// written) run out a Heartbeat after their last renewal.
			wait = min(wait, failedBeatRetry)
			p.cfg.Log.Warn("heartbeat failed", "err", err, "retry in", wait)
		}
		if i < len(peerBeats) {
			wait = min(wait, peerBeats[i])
		}
		timer.Reset(wait)
	}
}

// beat renews the leases of the running jobs that are still their run's, in one query,
// writes the worker entry and reads the live workers and the limits (one query).
func (p *Processor) beat(started time.Time) (err error) {
	// A beat that hangs is given up before the leases it renews end.
	ctx, cancel := context.WithTimeout(p.hard, max(p.cfg.Heartbeat/4, minWriteTimeout))
	defer cancel()
	defer func() { p.timedOut(ctx, err) }()
	// A run claimed less than a period ago holds a lease that outlasts the next beat by
	// more than Heartbeat/2: only older ones are renewed, so that a busy queue of short
	// jobs rewrites none. Runs whose handler has returned but whose outcome is not written yet
	// (a connection lost) are renewed too, until it is: their lease must not end first;
	// and so are the jobs a claim whose answer was lost may hold, until the producer
	// finds them.
	now := time.Now()
	runs := append(p.exec.runsStartedBefore(now.Add(-renewPeriod(p.cfg.Heartbeat))), p.comp.unwritten()...)
	ids := p.prod.lostClaims()
	if len(runs) > 0 || len(ids) > 0 {
		lease := HeartbeatLease(p.cfg.Heartbeat)
		if ids == nil {
			ids = make(map[string]int, len(runs))
		}
		for _, rn := range runs {
			ids[rn.claimed.ID] = rn.claimed.ProcessCount
		}
		if err := p.cfg.Store.RenewLeases(ctx, ids, lease); err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
		for _, rn := range runs {
			rn.leaseEnd.Store(now.Add(lease).UnixNano())
		}
	}
	w := rdb.WorkerBeat{Started: started, Running: p.exec.count(), Concurrency: p.cfg.Concurrency(),
		Heartbeat: p.cfg.Heartbeat, Limits: p.cfg.Limits != nil}
	asked := time.Now()
	b, err := p.cfg.Store.PutWorker(ctx, w)
	if err != nil && w.Limits && ctx.Err() == nil {
		// The limits table may be what failed (unavailable for a moment): the entry and
		// the peers matter more, and the producer reads the limits itself when no beat
		// has for a while.
		w.Limits = false
		b, err = p.cfg.Store.PutWorker(ctx, w)
	}
	if err != nil {
		return fmt.Errorf("worker entry: %w", err)
	}
	if b.Limits != nil {
		p.prod.beatLimits(*b.Limits, asked)
	}
	peers := make([]string, len(b.Workers))
	for i, w := range b.Workers {
		peers[i] = w.QueueID
	}
	p.prod.setPeers(peers)
	return nil
}

// failedBeatRetry is how soon a failed beat is tried again.
const failedBeatRetry = 500 * time.Millisecond

// leaseMargin is what a lease lasts beyond Heartbeat from each renewal: a renewal may be
// late by half a period and the margin before anyone takes the job for orphaned.
const leaseMargin = time.Second

// HeartbeatLease is how long a lease lasts from a renewal, with beats every
// renewPeriod(heartbeat).
func HeartbeatLease(heartbeat time.Duration) time.Duration { return heartbeat + leaseMargin }

// renewPeriod is the period of the beats that renew leases: Heartbeat/4.
func renewPeriod(heartbeat time.Duration) time.Duration { return heartbeat / 4 }

// LeastLeaseLeft is the least a running job's lease has left at any moment, with
// heartbeats every renewPeriod: HeartbeatLease less two periods, Heartbeat/2 + 1 s.
func LeastLeaseLeft(heartbeat time.Duration) time.Duration {
	return HeartbeatLease(heartbeat) - 2*renewPeriod(heartbeat)
}

// unregister removes this queue's worker entry, best effort: entries of queues that
// crashed are pruned by Workers.
func (p *Processor) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.cfg.Store.DeleteWorker(ctx)
}
