package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// DefaultCancelReason is the log message of a cancel given no reason.
const DefaultCancelReason = "Job cancelled"

// CancelJob is queue.Queue.CancelJob, whose doc says what it does.
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
		return nil, fmt.Errorf("queue %s: cancel jobs: %w", q.cfg.Name, err)
	}
	if len(missing) > 0 {
		return nil, missingError(missing)
	}
	kin := q.kinOf(ctx, ids)
	if err := q.cancelled(ctx, ids, counts, reason); err != nil {
		return ids, err
	}
	return ids, q.descendantsOf(ctx, kin, job.Cancelled)
}

// kinOf reads the names of the jobs ids and the children they list, on a table with
// workflows (nil on another), for descendantsOf, before a write that may remove the
// jobs. A read that fails leaves the children to those read then and to a Queue Master.
func (q *Queue) kinOf(ctx context.Context, ids []string) map[string]rdb.Listed {
	if !q.knowsWorkflows(ctx) {
		return nil
	}
	kin, err := q.db.ListedChildren(ctx, ids)
	if err != nil {
		q.log.Warn("reading the children of jobs failed; a Queue Master settles them", "err", err)
		kin = make(map[string]rdb.Listed, len(ids))
	}
	for _, id := range ids {
		if _, ok := kin[id]; !ok {
			kin[id] = rdb.Listed{}
		}
	}
	return kin
}

// descendantsOf cancels the blocked descendants of the jobs of kin (id → its name and
// the children it listed, see kinOf), which were cancelled (status) or removed ("").
func (q *Queue) descendantsOf(ctx context.Context, kin map[string]rdb.Listed, status job.Status) error {
	if len(kin) == 0 {
		return nil
	}
	failed := make(map[string]failedParent, len(kin))
	for id, l := range kin {
		failed[id] = failedParent{origin: origin{id: id, name: l.Name, status: status}, children: l.Children}
	}
	if err := q.parentsFinished(ctx, nil, failed); err != nil {
		return fmt.Errorf("queue %s: cancel the jobs waiting for them: %w", q.cfg.Name, err)
	}
	return nil
}

// cancelled follows the cancel of jobs: the handlers here of the runs it ended (by their
// processCount, see rdb.Table.Cancel) are cancelled, their events raised, and they are
// removed when finished jobs go at once.
func (q *Queue) cancelled(ctx context.Context, ids []string, counts map[string]int, reason string) error {
	p := q.processor()
	for _, id := range ids {
		if p != nil {
			p.Disown(id, counts[id], job.ErrCancelled)
		}
		q.emit(Event{Type: EventCancelled, JobID: id, Reason: reason})
	}
	if q.cfg.RemovesImmediately() {
		return q.delete(ctx, ids)
	}
	return nil
}

// ReanimateJob is queue.Queue.ReanimateJob, whose doc says what it does.
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
		return nil, fmt.Errorf("queue %s: reanimate jobs: %w", q.cfg.Name, err)
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

// RemoveJob is queue.Queue.RemoveJob, whose doc says what it does.
func (q *Queue) RemoveJob(ctx context.Context, ids ...string) ([]string, error) {
	ids, end, err := q.beginWithIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer end()
	kin := q.kinOf(ctx, ids)
	if err := q.delete(ctx, ids); err != nil {
		return nil, err
	}
	return ids, q.descendantsOf(ctx, kin, "")
}

// delete removes jobs known to be valid ids and raises their removed events.
func (q *Queue) delete(ctx context.Context, ids []string) error {
	q.noteRemovals(ids)
	missing, err := q.db.Delete(ctx, ids)
	if err != nil {
		return fmt.Errorf("queue %s: remove jobs: %w", q.cfg.Name, err)
	}
	if len(missing) > 0 {
		return missingError(missing)
	}
	for _, id := range ids {
		q.emit(Event{Type: EventRemoved, JobID: id})
	}
	return nil
}
