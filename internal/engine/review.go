package engine

import (
	"context"
	"fmt"
	"time"

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
		Expire: q.expireDue,
	}
}

// expireDue cancels the jobs whose start deadline has passed (job.SetDeadline), a
// thousand at a time, and raises their cancelled events.
func (q *Queue) expireDue(ctx context.Context) error {
	for {
		ids, err := q.db.ExpireDue(ctx, time.Now().UTC().Truncate(time.Millisecond), expireBatch)
		if err != nil || len(ids) == 0 {
			return err
		}
		q.expiredMetric(len(ids))
		if err := q.cancelled(ctx, ids, nil, job.MessageDeadlinePassed); err != nil {
			return err
		}
		if len(ids) < expireBatch {
			return nil
		}
	}
}

// expireBatch is how many jobs past their deadline one write cancels at most.
const expireBatch = 1000
