package queue

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
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

// workersTable is the side table of the queue's workers, which the Node.js library never
// reads.
func (q *Queue) workersTable() r.Term { return r.DB(q.cfg.db).Table(q.cfg.name + "_workers") }

// heartbeat renews the leases of the running jobs and this queue's worker entry every
// Heartbeat/2 until the processor stops; it removes the entry then.
func (p *processor) heartbeat() {
	defer p.beats.Done()
	q := p.q
	if err := dbinit.Assert(p.hard, dbinit.Target{
		Session: q.session, DB: q.cfg.db, Table: q.cfg.name + "_workers", RunOpts: q.cfg.runOpts, NoIndexes: true,
	}); err != nil && p.hard.Err() == nil {
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
	owned := make(map[string]any, len(p.running))
	ids := make([]any, 0, len(p.running))
	for rn := range p.running {
		owned[rn.claimed.ID] = rn.claimed.ProcessCount
		ids = append(ids, rn.claimed.ID)
	}
	running, concurrency := len(p.running), q.Concurrency()
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(p.hard, q.cfg.heartbeat)
	defer cancel()
	if len(ids) > 0 {
		lease := q.cfg.heartbeatLease().Seconds()
		renew := r.Expr(owned).Do(func(pc r.Term) r.Term {
			return q.db.Term().GetAll(ids...).Update(func(row r.Term) any {
				mine := row.Field("status").Eq(string(job.Active)).
					And(row.Field("processCount").Eq(pc.Field(row.Field("id")))).
					And(row.Field("dateEnable").Lt(r.Now().Add(lease)))
				return r.Branch(mine, map[string]any{"dateEnable": r.Now().Add(lease)}, map[string]any{})
			})
		})
		if _, err := q.db.Write(ctx, renew); err != nil {
			return fmt.Errorf("renew leases: %w", err)
		}
	}
	entry := map[string]any{
		"id": q.id, "started": started, "lastSeen": r.Now(), "running": running,
		"concurrency": concurrency, "heartbeat": q.cfg.heartbeat.Milliseconds(),
	}
	if _, err := q.db.Write(ctx, q.workersTable().Insert(entry, r.InsertOpts{Conflict: "replace", Durability: "soft"})); err != nil {
		return fmt.Errorf("worker entry: %w", err)
	}
	return nil
}

// unregister removes this queue's worker entry, best effort: entries of queues that
// crashed are pruned by Workers.
func (p *processor) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = p.q.db.Write(ctx, p.q.workersTable().Get(p.q.id).Delete())
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
	stale := func(w r.Term) r.Term {
		return w.Field("lastSeen").Add(w.Field("heartbeat").Mul(3).Div(1000)).Lt(r.Now())
	}
	var docs []struct {
		QueueID     string    `rethinkdb:"id"`
		Started     time.Time `rethinkdb:"started"`
		LastSeen    time.Time `rethinkdb:"lastSeen"`
		Running     int       `rethinkdb:"running"`
		Concurrency int       `rethinkdb:"concurrency"`
	}
	if err := q.readSide(ctx, q.workersTable(), q.workersTable().Filter(func(w r.Term) r.Term { return stale(w).Not() }).OrderBy("id"), &docs); err != nil {
		return nil, fmt.Errorf("queue %s: list workers: %w", q.cfg.name, err)
	}
	if _, err := q.db.Write(ctx, q.workersTable().Filter(stale).Delete()); err != nil && !noTable(err) {
		q.log.Info("pruning dead workers failed", "err", err)
	}
	out := make([]Worker, len(docs))
	for i, d := range docs {
		out[i] = Worker(d)
	}
	return out, nil
}

// expiredLeases reports whether an active job's lease has passed: its worker died or
// hung. One read of the first entry of the original's active index.
func (q *Queue) expiredLeases(ctx context.Context) (bool, error) {
	var n int
	err := q.db.ReadOne(ctx, q.db.Term().Between(r.MinVal, r.Now(), r.BetweenOpts{Index: dbinit.IndexActiveDateEnable}).
		Limit(1).Count(), &n)
	return n > 0, err
}
