package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// Review runs the Queue Master's review now, on any queue: active jobs whose dateEnable
// has passed (their worker crashed or hung) are failed, or terminated when no retry is
// left; finished jobs older than RemoveFinishedJobs are removed; the State Document is set
// to "reviewed", so every queue on the table claims again. This queue raises a local
// reviewed event and claims again too. A Queue Master runs it every MasterInterval.
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
		DB:           q.cfg.db,
		Table:        q.cfg.name,
		RunOpts:      q.cfg.runOpts,
		QueueID:      q.id,
		LimitJobLogs: q.cfg.limitJobLogs,
		Retention: master.Retention{
			Keep:        q.cfg.removeFinished < 0,
			Immediately: q.cfg.removeImmediately(),
			Period:      q.cfg.removeFinished,
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
		err = fmt.Errorf("queue %s: review: %w", q.cfg.name, err)
		q.emit(Event{Type: EventError, Err: err})
		return ReviewResult{}, err
	}
	result := ReviewResult{Reviewed: res.Reviewed, Removed: res.Removed, Local: true}
	q.log.Debug("reviewed", "orphans", res.Reviewed, "removed", res.Removed)
	q.emit(Event{Type: EventReviewed, Review: &result})
	q.wakeProcessing()
	return result, nil
}

// reviewEvery runs the Queue Master's review on its interval until Stop.
func (q *Queue) reviewEvery(ctx context.Context) {
	if q.ready0(ctx) != nil {
		return
	}
	master.Every(ctx, q.cfg.masterInterval, func(ctx context.Context) {
		if _, err := q.review(ctx, true); err != nil {
			q.log.Warn("review failed", "err", err)
		}
	})
}

// tallyEvery keeps the tally of finished jobs, which Summary reads, up to date until
// Stop; Queue Masters run it.
func (q *Queue) tallyEvery(ctx context.Context) {
	if q.ready0(ctx) != nil {
		return
	}
	tick := time.NewTicker(master.TallyEvery)
	defer tick.Stop()
	for {
		if err := master.AdvanceTally(ctx, q.masterTarget()); err != nil && ctx.Err() == nil {
			q.log.Warn("counting finished jobs failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
