package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// Review is queue.Queue.Review, whose doc says what it does.
func (q *Queue) Review(ctx context.Context) (ReviewResult, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return ReviewResult{}, err
	}
	defer end()
	return q.review(ctx, true)
}

// masterTarget is this queue's table as the master package reviews it.
func (q *Queue) masterTarget() master.Target {
	return master.Target{
		Session:      q.session,
		DB:           q.cfg.DB,
		Table:        q.cfg.Name,
		RunOpts:      q.cfg.RunOpts,
		QueueID:      q.id,
		LimitJobLogs: q.cfg.LimitJobLogs,
		Retention: master.Retention{
			Keep:        q.cfg.RemoveFinished < 0,
			Immediately: q.cfg.RemovesImmediately(),
			Period:      q.cfg.RemoveFinished,
		},
		TallyFrom: q.exactBelow,
		Log:       q.log,
	}
}

// review is Review without the checks of a call, for the Master's loops and Process;
// remove tells whether it removes finished jobs (a worker's review before it starts
// processing does not).
func (q *Queue) review(ctx context.Context, remove bool) (ReviewResult, error) {
	t := q.masterTarget()
	if !remove {
		t.Retention.Keep = true
	}
	res, err := master.Review(ctx, t)
	if err != nil {
		err = fmt.Errorf("queue %s: review: %w", q.cfg.Name, err)
		q.emit(Event{Type: EventError, Err: err})
		return ReviewResult{}, err
	}
	if err := q.settleBlocked(ctx); err != nil {
		q.log.Warn("review: settling the blocked jobs of workflows failed", "err", err)
	}
	if remove {
		q.pruneTurns(ctx)
	}
	result := ReviewResult{Reviewed: res.Reviewed, Removed: res.Removed, Local: true}
	q.log.Debug("reviewed", "orphans", res.Reviewed, "removed", res.Removed)
	q.emit(Event{Type: EventReviewed, Review: &result})
	q.wakeProcessing()
	return result, nil
}

// masterServices are the loops this queue runs as a Queue Master.
func (q *Queue) masterServices() master.Services {
	return master.Services{
		Target:    q.masterTarget(),
		Ready:     q.ready0,
		Interval:  q.cfg.MasterInterval,
		Heartbeat: q.cfg.Heartbeat,
		Review: func(ctx context.Context, remove bool) error {
			_, err := q.review(ctx, remove)
			return err
		},
		Enqueue: func(ctx context.Context, j *job.Job) error {
			_, err := q.AddJob(ctx, j)
			return err
		},
		Expire: q.ExpireDue,
	}
}

// ExpireDue cancels the jobs whose start deadline has passed (job.SetDeadline), a
// thousand at a time, and raises their cancelled events. It reads the table only while
// the table has the index of start deadlines, which the first job with a deadline
// brings: a table whose jobs have none costs a look at its index list a minute, not a
// query a second. This queue's own AddJob of such a job, or one seen on its changefeed,
// makes it look at its next tick.
func (q *Queue) ExpireDue(ctx context.Context) error {
	if !q.deadlineIndexSeen.Load() {
		now := time.Now()
		if now.UnixNano() < q.deadlineIndexCheck.Load() {
			return nil
		}
		q.deadlineIndexCheck.Store(now.Add(deadlineIndexRecheck).UnixNano())
		has, err := q.db.HasIndex(ctx, rdb.IndexDeadline)
		if err != nil || !has {
			return err
		}
		q.deadlineIndexSeen.Store(true)
	}
	for {
		ids, err := q.db.ExpireDue(ctx, time.Now().UTC().Truncate(time.Millisecond), expireBatch)
		if errors.Is(err, rdb.ErrNoDeadlineIndex) {
			// Dropped by hand, or so new that the table's replicas do not have it yet (its
			// configuration lists it before they do): look at the list again at the next
			// tick, which says which.
			q.deadlineIndexSeen.Store(false)
			q.deadlineIndexCheck.Store(0)
			return nil
		}
		if err != nil || len(ids) == 0 {
			return err
		}
		q.expiredMetric(len(ids))
		kin := q.kinOf(ctx, ids)
		if err := q.cancelled(ctx, ids, nil, job.MessageDeadlinePassed); err != nil {
			return err
		}
		if err := q.descendantsOf(ctx, kin, job.Cancelled); err != nil {
			return err
		}
		if len(ids) < expireBatch {
			return nil
		}
	}
}

// expireBatch is how many jobs past their deadline one write cancels at most.
const expireBatch = 1000

// deadlineIndexRecheck is how often a Master looks for the index of start deadlines on a
// table without it (see ExpireDue).
const deadlineIndexRecheck = time.Minute

// deadlineSeen tells the Master's expiry that a job with a start deadline exists: unless
// it already reads the index of start deadlines, it looks for it at its next tick.
func (q *Queue) deadlineSeen() {
	if !q.deadlineIndexSeen.Load() {
		q.deadlineIndexCheck.Store(0)
	}
}
