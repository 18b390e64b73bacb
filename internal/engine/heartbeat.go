package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// leaseEnd is when a run of j that starts (or renews, or reports progress) at now may be
// taken for a crashed one (see rdb.LeaseEnd): with heartbeats on, a running job's lease
// lasts Heartbeat + 1s from each renewal, renewed every Heartbeat/4.
func (q *Queue) leaseEnd(j *job.Job, now time.Time) time.Time {
	var hb time.Duration
	if q.cfg.heartbeats() {
		hb = processor.HeartbeatLease(q.cfg.Heartbeat)
	}
	return rdb.LeaseEnd(j, now, hb)
}

// Workers is queue.Queue.Workers, whose doc says what it does.
func (q *Queue) Workers(ctx context.Context) ([]rdb.WorkerEntry, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	var docs []rdb.WorkerEntry
	err = q.onSide(ctx, rdb.WorkersSuffix, func() (err error) {
		docs, err = q.db.Workers(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s: list workers: %w", q.cfg.Name, err)
	}
	if err := q.db.PruneWorkers(ctx); err != nil {
		q.log.Info("pruning dead workers failed", "err", err)
	}
	return docs, nil
}
