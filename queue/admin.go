package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// DefaultCancelReason is the log message of a cancel given no reason.
const DefaultCancelReason = "Job cancelled"

// CancelJob cancels the jobs with the given ids: status cancelled, dateFinished now, and a
// log entry whose message is reason (DefaultCancelReason when empty). When the queue
// removes finished jobs immediately, they are then removed. Every id must be in the queue:
// when one is not, nothing changes and the error wraps job.ErrNotFound. It returns the
// cancelled ids.
func (q *Queue) CancelJob(ctx context.Context, reason string, ids ...string) ([]string, error) {
	if reason == "" {
		reason = DefaultCancelReason
	}
	ids, end, err := q.beginWithIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer end()
	return q.cancel(ctx, reason, ids)
}

// cancel cancels jobs known to be valid ids, without the checks of a public call. A job
// running here has its handler's context cancelled.
func (q *Queue) cancel(ctx context.Context, reason string, ids []string) ([]string, error) {
	counts, missing, err := q.db.Cancel(ctx, ids, time.Now().UTC().Truncate(time.Millisecond), reason)
	if err != nil {
		return nil, fmt.Errorf("queue %s: cancel jobs: %w", q.cfg.name, err)
	}
	if len(missing) > 0 {
		return nil, missingError(missing)
	}
	return ids, q.cancelled(ctx, ids, counts)
}

// cancelled follows the cancel of jobs: the handlers here of the runs it ended (by their
// processCount, see rdb.Table.Cancel) are cancelled, their events raised, and they are
// removed when finished jobs go at once.
func (q *Queue) cancelled(ctx context.Context, ids []string, counts map[string]int) error {
	p := q.processor()
	for _, id := range ids {
		if p != nil {
			p.Disown(id, counts[id], job.ErrCancelled)
		}
		q.emit(Event{Type: EventCancelled, JobID: id})
	}
	if q.cfg.removeImmediately() {
		return q.delete(ctx, ids)
	}
	return nil
}

// ReanimateJob puts the jobs with the given ids back in the queue, whatever their status:
// status waiting, retryCount and progress 0, dateEnable as given (now when zero), and the
// log entry "Job has been reanimated". Every id must be in the queue: when one is not,
// nothing changes and the error wraps job.ErrNotFound. It returns the reanimated ids.
func (q *Queue) ReanimateJob(ctx context.Context, dateEnable time.Time, ids ...string) ([]string, error) {
	ids, end, err := q.beginWithIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer end()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if dateEnable.IsZero() {
		dateEnable = now
	}
	dateEnable = dateEnable.UTC().Truncate(time.Millisecond)
	missing, err := q.db.Reanimate(ctx, ids, now, dateEnable)
	if err != nil {
		return nil, fmt.Errorf("queue %s: reanimate jobs: %w", q.cfg.name, err)
	}
	if len(missing) > 0 {
		return nil, missingError(missing)
	}
	for _, id := range ids {
		q.emit(Event{Type: EventReanimated, JobID: id})
	}
	q.wakeProcessing()
	return ids, nil
}

// RemoveJob deletes the jobs with the given ids from the queue. Every id must be in the
// queue: when one is not, nothing is deleted and the error wraps job.ErrNotFound. It
// returns the removed ids.
func (q *Queue) RemoveJob(ctx context.Context, ids ...string) ([]string, error) {
	ids, end, err := q.beginWithIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer end()
	if err := q.delete(ctx, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// delete removes jobs known to be valid ids and raises their removed events.
func (q *Queue) delete(ctx context.Context, ids []string) error {
	q.noteRemovals(ids)
	missing, err := q.db.Delete(ctx, ids)
	if err != nil {
		return fmt.Errorf("queue %s: remove jobs: %w", q.cfg.name, err)
	}
	if len(missing) > 0 {
		return missingError(missing)
	}
	for _, id := range ids {
		q.emit(Event{Type: EventRemoved, JobID: id})
	}
	return nil
}
