package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Worker is a queue that processes jobs of a table, as Workers lists it.
type Worker struct {
	// QueueID is the queue's id (hostname:db:queue:pid:uuid).
	QueueID string
	// Started is when the queue began processing; LastSeen its latest heartbeat.
	Started, LastSeen time.Time
	// Running is how many jobs it ran at its latest heartbeat, of Concurrency at most.
	Running, Concurrency int
}

// With heartbeats on, a running job's lease lasts Heartbeat plus leaseMargin from each
// renewal, and renewals go every Heartbeat/2: a renewal may be late by half a period and
// the margin before anyone takes the job for orphaned. Masters look for expired leases
// every Heartbeat/4 (at least every second), so a job whose worker died is failed and
// retried within about 1.25 × Heartbeat + 1s of the death.
const leaseMargin = time.Second

// heartbeatLease is how long a lease lasts from a renewal.
func (c config) heartbeatLease() time.Duration { return c.heartbeat + leaseMargin }

// leaseEnd is when a run of j that starts (or renews, or reports progress) at now may be
// taken for a crashed one (see rdb.LeaseEnd).
func (q *Queue) leaseEnd(j *job.Job, now time.Time) time.Time {
	var hb time.Duration
	if q.cfg.heartbeats() {
		hb = q.cfg.heartbeatLease()
	}
	return rdb.LeaseEnd(j, now, hb)
}

// heartbeat renews the leases of the running jobs and this queue's worker entry every
// Heartbeat/2 until the processor stops; it removes the entry then.
func (p *processor) heartbeat(context.Context) {
	q := p.q
	if err := q.assertSide(p.hard, rdb.WorkersSuffix); err != nil && p.hard.Err() == nil {
		q.log.Warn("creating the workers table failed; Workers will not list this queue", "err", err)
	}
	started := time.Now()
	ticker := time.NewTicker(q.cfg.heartbeat / 2)
	defer ticker.Stop()
	for {
		if err := p.beat(started); err != nil && p.hard.Err() == nil {
			q.log.Warn("heartbeat failed", "err", err)
		}
		select {
		case <-p.quit:
			p.unregister()
			return
		case <-p.hard.Done():
			p.unregister()
			return
		case <-ticker.C:
		}
	}
}

// beat renews the leases of the running jobs that are still this run's, in one query, and
// writes the worker entry.
func (p *processor) beat(started time.Time) error {
	q := p.q
	p.mu.Lock()
	running := make(map[string]int, len(p.running))
	for rn := range p.running {
		running[rn.claimed.ID] = rn.claimed.ProcessCount
	}
	n, concurrency := len(p.running), q.Concurrency()
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(p.hard, q.cfg.heartbeat)
	defer cancel()
	if len(running) > 0 {
		if err := q.db.RenewLeases(ctx, running, q.cfg.heartbeatLease()); err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
	}
	if err := q.db.PutWorker(ctx, started, n, concurrency, q.cfg.heartbeat); err != nil {
		return fmt.Errorf("worker entry: %w", err)
	}
	return nil
}

// unregister removes this queue's worker entry, best effort: entries of queues that
// crashed are pruned by Workers.
func (p *processor) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.q.db.DeleteWorker(ctx)
}

// Workers lists the queues that process this table's jobs and are alive: those whose
// latest heartbeat is less than three of their heartbeats old (Go queues with
// Options.Heartbeat on; Node.js workers do not register). It prunes the entries of dead
// ones.
func (q *Queue) Workers(ctx context.Context) ([]Worker, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	docs, err := q.db.Workers(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue %s: list workers: %w", q.cfg.name, err)
	}
	if err := q.db.PruneWorkers(ctx); err != nil {
		q.log.Info("pruning dead workers failed", "err", err)
	}
	out := make([]Worker, len(docs))
	for i, d := range docs {
		out[i] = Worker(d)
	}
	return out, nil
}
