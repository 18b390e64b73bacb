package processor

import (
	"context"
	"fmt"
	"time"
)

// With heartbeats on, a running job's lease lasts Heartbeat plus a margin from each
// renewal, and renewals go every Heartbeat/2, in one query for all the queue's running
// jobs, with the queue's worker entry. The same beat reads the table's live workers,
// which rank the queues for jobs made claimable elsewhere (see producer.go); the first
// beats come sooner, so that queues started together know each other within a second.

// peerBeats are the waits before the first beats after the first one.
var peerBeats = []time.Duration{250 * time.Millisecond, time.Second}

// heartbeat renews the leases of the running jobs and this queue's worker entry every
// Heartbeat/2 until the processor stops; it removes the entry then.
func (p *Processor) heartbeat() {
	if p.cfg.AssertWorkers != nil {
		if err := p.cfg.AssertWorkers(p.hard); err != nil && p.hard.Err() == nil {
			p.cfg.Log.Warn("creating the workers table failed; Workers will not list this queue", "err", err)
		}
	}
	started := time.Now()
	period := p.cfg.Heartbeat / 2
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
		if err := p.beat(started); err != nil && p.hard.Err() == nil {
			p.cfg.Log.Warn("heartbeat failed", "err", err)
		}
		wait := period
		if i < len(peerBeats) {
			wait = min(wait, peerBeats[i])
		}
		timer.Reset(wait)
	}
}

// beat renews the leases of the running jobs that are still their run's, in one query,
// writes the worker entry and reads the live workers.
func (p *Processor) beat(started time.Time) error {
	ctx, cancel := context.WithTimeout(p.hard, p.cfg.Heartbeat)
	defer cancel()
	// A run claimed less than half a period ago holds a lease that outlasts the next beat
	// by the margin: only older ones are renewed, so that a busy queue of short jobs
	// rewrites none.
	if old := p.exec.startedBefore(time.Now().Add(-p.cfg.Heartbeat / 2)); len(old) > 0 {
		if err := p.cfg.Store.RenewLeases(ctx, old, p.cfg.Heartbeat+leaseMargin); err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
	}
	if err := p.cfg.Store.PutWorker(ctx, started, p.exec.count(), p.cfg.Concurrency(), p.cfg.Heartbeat); err != nil {
		return fmt.Errorf("worker entry: %w", err)
	}
	workers, err := p.cfg.Store.Workers(ctx)
	if err != nil {
		return fmt.Errorf("read the workers: %w", err)
	}
	peers := make([]string, len(workers))
	for i, w := range workers {
		peers[i] = w.QueueID
	}
	p.prod.setPeers(peers)
	return nil
}

// leaseMargin is what a lease lasts beyond Heartbeat from each renewal: a renewal may be
// late by half a period and the margin before anyone takes the job for orphaned.
const leaseMargin = time.Second

// HeartbeatLease is how long a lease lasts from a renewal, with heartbeats every
// heartbeat/2.
func HeartbeatLease(heartbeat time.Duration) time.Duration { return heartbeat + leaseMargin }

// unregister removes this queue's worker entry, best effort: entries of queues that
// crashed are pruned by Workers.
func (p *Processor) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.cfg.Store.DeleteWorker(ctx)
}
