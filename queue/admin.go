package queue

import (
	"context"
	"time"
)

// DefaultCancelReason is the log message of a cancel given no reason.
const DefaultCancelReason = "Job cancelled"

// CancelJob cancels the jobs with the given ids: status cancelled, dateFinished now, and a
// log entry whose message is reason (DefaultCancelReason when empty). When the queue
// removes finished jobs immediately, they are then removed. Every id must be in the queue:
// when one is not, nothing changes and the error wraps job.ErrNotFound. It returns the
// cancelled ids.
func (q *Queue) CancelJob(ctx context.Context, reason string, ids ...string) ([]string, error) {
	return public(q.e.CancelJob(ctx, reason, ids...))
}

// ReanimateJob puts the jobs with the given ids back in the queue, whatever their status:
// status waiting, retryCount and progress 0, dateEnable as given (now when zero), and the
// log entry "Job has been reanimated". Every id must be in the queue: when one is not,
// nothing changes and the error wraps job.ErrNotFound. It returns the reanimated ids.
func (q *Queue) ReanimateJob(ctx context.Context, dateEnable time.Time, ids ...string) ([]string, error) {
	return public(q.e.ReanimateJob(ctx, dateEnable, ids...))
}

// RemoveJob deletes the jobs with the given ids from the queue. Every id must be in the
// queue: when one is not, nothing is deleted and the error wraps job.ErrNotFound. It
// returns the removed ids.
func (q *Queue) RemoveJob(ctx context.Context, ids ...string) ([]string, error) {
	return public(q.e.RemoveJob(ctx, ids...))
}
