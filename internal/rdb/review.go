package rdb

import (
	"context"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// MessageOrphan is the log message of a job the review fails, the original's.
const MessageOrphan = "Master: " + job.MessageFailed

// FailOrphans fails the active jobs whose dateEnable has passed, read through the
// indexActiveDateEnable range [-∞, now), and the active jobs whose dateEnable is no time
// at all (written by hand or by another tool: that index cannot order them, and no lease
// of theirs would ever end). The update checks again, so a job its worker finished
// meanwhile is left alone. A document with fields of the wrong type is failed all the
// same: a retry count that is not a number counts as 0, a log that is not an array is
// replaced; nothing in the update can raise an error that would stop the review of the
// others.
func (t *Table) FailOrphans(ctx context.Context) (int, error) {
	expired := t.Term().Between(r.MinVal, r.Now(), r.BetweenOpts{Index: IndexActiveDateEnable})
	n, err := t.failOrphans(ctx, expired)
	if err != nil {
		return n, err
	}
	// Active jobs are bounded by the work running: reading them all is cheap.
	timeless := t.Term().GetAllByIndex(IndexStatus, string(job.Active)).Filter(func(row r.Term) r.Term {
		return row.Field("dateEnable").Default(nil).TypeOf().Ne("PTYPE<TIME>")
	})
	m, err := t.failOrphans(ctx, timeless)
	return n + m, err
}

// failOrphans fails the orphans among the active jobs of sel.
func (t *Table) failOrphans(ctx context.Context, sel r.Term) (int, error) {
	// A replace with a merge, not an update: a time merged into a field that holds an
	// object (written by hand) makes an invalid time and fails the whole write, and only
	// a merge takes r.Literal, which sets the field whatever it held.
	n, err := t.Write(ctx, sel.Replace(func(row r.Term) any {
		number := func(field string) r.Term {
			v := row.Field(field).Default(nil)
			return r.Branch(v.TypeOf().Eq("NUMBER"), v, 0)
		}
		retryCount, retryMax, processCount := number("retryCount"), number("retryMax"), number("processCount")
		retry := retryCount.Lt(retryMax)
		status := r.Branch(retry, string(job.Failed), string(job.Terminated))
		entry, trunc := RowLog(t.QueueID, t.LimitJobLogs, MessageOrphan, Stamps{
			Date:         r.Now(),
			Status:       status,
			Type:         r.Branch(retry, string(job.Warning), string(job.Error)),
			RetryCount:   retryCount,
			ProcessCount: processCount,
		}, true)
		enable := row.Field("dateEnable").Default(nil)
		entry = entry.Merge(map[string]any{"dateEnable": enable})
		log := row.Field("log").Default(nil)
		orphaned := row.Field("status").Eq(string(job.Active)).
			And(enable.TypeOf().Ne("PTYPE<TIME>").Or(enable.Lt(r.Now())))
		return r.Branch(orphaned, row.Merge(map[string]any{
			"status":       status,
			"dateFinished": r.Literal(r.Now()),
			"retryCount":   r.Branch(retry, retryCount.Add(1), retryCount),
			"log": r.Branch(log.TypeOf().Eq("ARRAY"),
				AppendLogTerm(log, entry, trunc, t.LimitJobLogs),
				[]any{entry}),
			"queueId": t.QueueID,
		}), row)
	}))
	if err != nil {
		return n.Replaced, err
	}
	return n.Replaced, nil
}
