package queue

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
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
	now := time.Now().UTC().Truncate(time.Millisecond)
	res, err := q.db.Write(ctx, q.whenAllExist(ids, func(jobs r.Term) r.Term {
		return jobs.Update(func(row r.Term) any { return q.cancelFields(row, now, reason) }, r.UpdateOpts{ReturnChanges: true})
	}))
	if err != nil {
		return nil, fmt.Errorf("queue %s: cancel jobs: %w", q.cfg.name, err)
	}
	if len(res.Missing) > 0 {
		return nil, missingError(res.Missing)
	}
	return ids, q.cancelled(ctx, ids, processCounts(res))
}

// processCounts maps the ids of the jobs a write changed to their processCount, which
// tells which runs of them the write ended: those of a claim before it.
func processCounts(res rdb.WriteResult) map[string]int {
	counts := make(map[string]int, len(res.Changes))
	for _, c := range res.Changes {
		if doc, ok := c.NewValue.(map[string]any); ok {
			id, _ := doc["id"].(string)
			n, _ := doc["processCount"].(float64)
			counts[id] = int(n)
		}
	}
	return counts
}

// cancelFields is the update that cancels the job row.
func (q *Queue) cancelFields(row r.Term, now time.Time, reason string) map[string]any {
	entry, trunc := q.rowLog(row, now, reason, job.Cancelled, true)
	return map[string]any{
		"status":       string(job.Cancelled),
		"dateFinished": now,
		"log":          q.db.AppendLog(row.Field("log"), entry, trunc),
		"queueId":      q.id,
	}
}

// cancelled follows the cancel of jobs: the handlers here of the runs it ended (by their
// processCount, see processCounts) are cancelled, their events raised, and they are
// removed when finished jobs go at once.
func (q *Queue) cancelled(ctx context.Context, ids []string, counts map[string]int) error {
	p := q.processor()
	for _, id := range ids {
		if p != nil {
			p.disown(id, counts[id], job.ErrCancelled)
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
	err = q.updateAll(ctx, "reanimate", ids, func(row r.Term) any {
		entry, trunc := q.rowLog(row, now, job.MessageReanimated, job.Waiting, false)
		return map[string]any{
			"status":     string(job.Waiting),
			"dateEnable": dateEnable,
			"retryCount": 0,
			"progress":   0,
			"log":        q.db.AppendLog(row.Field("log"), entry.Merge(map[string]any{"retryCount": 0}), trunc),
			"queueId":    q.id,
		}
	})
	if err != nil {
		return nil, err
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
	res, err := q.db.Write(ctx, q.whenAllExist(ids, func(jobs r.Term) r.Term { return jobs.Delete() }))
	if err != nil {
		return fmt.Errorf("queue %s: remove jobs: %w", q.cfg.name, err)
	}
	if len(res.Missing) > 0 {
		return missingError(res.Missing)
	}
	for _, id := range ids {
		q.emit(Event{Type: EventRemoved, JobID: id})
	}
	return nil
}

// updateAll applies update to every job of ids in one query, or to none when one is
// missing.
func (q *Queue) updateAll(ctx context.Context, what string, ids []string, update func(row r.Term) any) error {
	res, err := q.db.Write(ctx, q.whenAllExist(ids, func(jobs r.Term) r.Term { return jobs.Update(update) }))
	if err != nil {
		return fmt.Errorf("queue %s: %s jobs: %w", q.cfg.name, what, err)
	}
	if len(res.Missing) > 0 {
		return missingError(res.Missing)
	}
	return nil
}

// rowLog builds a log entry inside a query, stamped with the row's own counters and date
// (a time.Time, or r.Now() for the server's clock), and the truncation entry that goes
// with it.
func (q *Queue) rowLog(row r.Term, date any, message string, status job.Status, noData bool) (entry, trunc r.Term) {
	return rdb.RowLog(q.id, q.cfg.limitJobLogs, message, rdb.Stamps{
		Date:         date,
		Status:       string(status),
		RetryCount:   row.Field("retryCount"),
		ProcessCount: row.Field("processCount"),
	}, noData)
}
