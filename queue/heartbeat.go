package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
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

// leaseEnd is when a run of j that starts (or renews, or reports progress) at now may be
// taken for a crashed one (see rdb.LeaseEnd): with heartbeats on, a running job's lease
// lasts Heartbeat + 1s from each renewal, renewed every Heartbeat/2.
func (q *Queue) leaseEnd(j *job.Job, now time.Time) time.Time {
	var hb time.Duration
	if q.cfg.heartbeats() {
		hb = processor.HeartbeatLease(q.cfg.heartbeat)
	}
	return rdb.LeaseEnd(j, now, hb)
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
