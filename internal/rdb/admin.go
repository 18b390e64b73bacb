package rdb

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// whenAllExist guards write so that it runs only when every id is in the table; otherwise
// nothing is written and the result lists the missing ids. One query does both, so a
// call with one unknown id changes no job.
func (t *Table) whenAllExist(ids []string, write func(jobs r.Term) r.Term) r.Term {
	keys := Anys(ids)
	return t.Term().GetAll(keys...).Field("id").CoerceTo("array").Do(func(found r.Term) r.Term {
		return r.Branch(found.Count().Eq(len(ids)),
			write(t.Term().GetAll(keys...)),
			map[string]any{"missing": r.Expr(ids).SetDifference(found)})
	})
}

// rowLog builds a log entry inside a query, stamped with the row's own counters and the
// date, and the truncation entry that goes with it.
func (t *Table) rowLog(row r.Term, date time.Time, message string, status job.Status, noData bool) (entry, trunc r.Term) {
	return RowLog(t.QueueID, t.LimitJobLogs, message, Stamps{
		Date:         date,
		Status:       string(status),
		RetryCount:   row.Field("retryCount"),
		ProcessCount: row.Field("processCount"),
	}, noData)
}

// Cancel cancels the jobs ids at now with reason as the log message: status cancelled,
// dateFinished now. When one id is missing nothing changes and missing lists them. It
// returns the processCount of each job it cancelled, which tells which runs the cancel
// ended: those of a claim before it.
func (t *Table) Cancel(ctx context.Context, ids []string, now time.Time, reason string) (processCounts map[string]int, missing []string, err error) {
	res, err := t.Write(ctx, t.whenAllExist(ids, func(jobs r.Term) r.Term {
		return jobs.Update(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, reason, job.Cancelled, true)
			return map[string]any{
				"status":       string(job.Cancelled),
				"dateFinished": now,
				"log":          t.AppendLog(row.Field("log"), entry, trunc),
				"queueId":      t.QueueID,
			}
		}, r.UpdateOpts{ReturnChanges: true})
	}))
	if err != nil || len(res.Missing) > 0 {
		return nil, res.Missing, err
	}
	counts := make(map[string]int, len(res.Changes))
	for _, c := range res.Changes {
		if doc, ok := c.NewValue.(map[string]any); ok {
			id, _ := doc["id"].(string)
			n, _ := doc["processCount"].(float64)
			counts[id] = int(n)
		}
	}
	return counts, nil, nil
}

// Reanimate puts the jobs ids back to waiting at now, enabled at dateEnable, with
// retryCount and progress 0 and the entry "Job has been reanimated". When one id is
// missing nothing changes and missing lists them.
func (t *Table) Reanimate(ctx context.Context, ids []string, now, dateEnable time.Time) (missing []string, err error) {
	res, err := t.Write(ctx, t.whenAllExist(ids, func(jobs r.Term) r.Term {
		return jobs.Update(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, job.MessageReanimated, job.Waiting, false)
			return map[string]any{
				"status":     string(job.Waiting),
				"dateEnable": dateEnable,
				"retryCount": 0,
				"progress":   0,
				"log":        t.AppendLog(row.Field("log"), entry.Merge(map[string]any{"retryCount": 0}), trunc),
				"queueId":    t.QueueID,
			}
		})
	}))
	return res.Missing, err
}

// Delete removes the jobs ids, or none when one is missing (missing lists them).
func (t *Table) Delete(ctx context.Context, ids []string) (missing []string, err error) {
	res, err := t.Write(ctx, t.whenAllExist(ids, func(jobs r.Term) r.Term { return jobs.Delete() }))
	return res.Missing, err
}

// DeleteAny removes those of the jobs ids that are in the table.
func (t *Table) DeleteAny(ctx context.Context, ids []string) error {
	_, err := t.Write(ctx, t.Term().GetAll(Anys(ids)...).Delete())
	return err
}

// DeleteJobs removes every job and keeps the State Document; it returns how many it
// removed.
func (t *Table) DeleteJobs(ctx context.Context) (int, error) {
	res, err := t.Write(ctx, t.Term().Filter(func(doc r.Term) r.Term {
		return doc.Field("id").Ne(job.StateDocumentID)
	}).Delete())
	return res.Deleted, err
}

// Drop drops the table.
func (t *Table) Drop(ctx context.Context) error {
	_, err := t.Write(ctx, r.DB(t.DB).TableDrop(t.Name))
	return err
}

// WriteState writes the State Document with the given state ("paused", "active",
// "reviewed").
func (t *Table) WriteState(ctx context.Context, state string) error {
	_, err := t.Write(ctx, t.Term().Insert(StateDocument(t.QueueID, state), r.InsertOpts{Conflict: "replace"}))
	return err
}
