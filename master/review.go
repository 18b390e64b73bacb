package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// MessageOrphan is the log message of a job the review fails, the original's.
const MessageOrphan = "Master: " + job.MessageFailed

// Retention says which finished jobs the review removes.
type Retention struct {
	// Keep is true when finished jobs are never removed.
	Keep bool
	// Immediately is true when every finished job is removed.
	Immediately bool
	// Period is how long finished jobs are kept otherwise.
	Period time.Duration
}

// Target is the table to review and who reviews it.
type Target struct {
	Session r.QueryExecutor
	Table   r.Term
	// RunOpts are the queue's query run options; Context is set per query.
	RunOpts r.RunOpts
	// QueueID is the reviewing queue's id, written into what it changes.
	QueueID      string
	LimitJobLogs int
	Retention    Retention
}

// Result is what one review did.
type Result struct {
	// Reviewed is the number of orphaned jobs failed or terminated.
	Reviewed int
	// Removed is the number of finished jobs removed.
	Removed int
}

// Review runs the review once: orphaned jobs, then finished jobs, then the State Document.
// A step that fails does not keep the others from running; the error joins every step's.
func Review(ctx context.Context, t Target) (Result, error) {
	var res Result
	var orphanErr, removeErr error
	res.Reviewed, orphanErr = failOrphans(ctx, t)
	res.Removed, removeErr = removeFinished(ctx, t)
	state := t.Table.Insert(rdb.StateDocument(t.QueueID, "reviewed"), r.InsertOpts{Conflict: "replace"})
	var stateErr error
	if _, err := write(ctx, t, state); err != nil {
		stateErr = fmt.Errorf("master: write the State Document: %w", err)
	}
	return res, errors.Join(orphanErr, removeErr, stateErr)
}

// failOrphans fails the active jobs whose dateEnable has passed, read through the
// indexActiveDateEnable range [-∞, now). The update checks again, so a job its worker
// finished meanwhile is left alone. A document with fields of the wrong type (written by
// hand or by another tool) is failed all the same: a retry count that is not a number
// counts as 0, a log that is not an array is replaced; nothing in the update can raise an
// error that would stop the review of the others.
func failOrphans(ctx context.Context, t Target) (int, error) {
	orphans := t.Table.Between(r.MinVal, r.Now(), r.BetweenOpts{Index: dbinit.IndexActiveDateEnable})
	n, err := write(ctx, t, orphans.Update(func(row r.Term) any {
		number := func(field string) r.Term {
			v := row.Field(field).Default(nil)
			return r.Branch(v.TypeOf().Eq("NUMBER"), v, 0)
		}
		retryCount, retryMax, processCount := number("retryCount"), number("retryMax"), number("processCount")
		retry := retryCount.Lt(retryMax)
		status := r.Branch(retry, string(job.Failed), string(job.Terminated))
		entry, trunc := rdb.RowLog(t.QueueID, t.LimitJobLogs, MessageOrphan, rdb.Stamps{
			Date:         r.Now(),
			Status:       status,
			Type:         r.Branch(retry, string(job.Warning), string(job.Error)),
			RetryCount:   retryCount,
			ProcessCount: processCount,
		}, true)
		entry = entry.Merge(map[string]any{"dateEnable": row.Field("dateEnable")})
		log := row.Field("log").Default(nil)
		orphaned := row.Field("status").Eq(string(job.Active)).And(row.Field("dateEnable").Lt(r.Now()))
		return r.Branch(orphaned, map[string]any{
			"status":       status,
			"dateFinished": r.Now(),
			"retryCount":   r.Branch(retry, retryCount.Add(1), retryCount),
			"log": r.Branch(log.TypeOf().Eq("ARRAY"),
				rdb.AppendLogTerm(log, entry, trunc, t.LimitJobLogs),
				[]any{entry}),
			"queueId": t.QueueID,
		}, nil)
	}))
	if err != nil {
		return n.Replaced, fmt.Errorf("master: fail orphaned jobs: %w", err)
	}
	return n.Replaced, nil
}

// removeFinished deletes the finished jobs the retention allows, read through the
// indexFinishedDateFinished range.
func removeFinished(ctx context.Context, t Target) (int, error) {
	if t.Retention.Keep {
		return 0, nil
	}
	upTo := any(r.MaxVal)
	if !t.Retention.Immediately {
		upTo = r.Now().Sub(t.Retention.Period.Seconds())
	}
	finished := t.Table.Between(r.MinVal, upTo, r.BetweenOpts{Index: dbinit.IndexFinishedDateFinished})
	n, err := write(ctx, t, finished.Delete())
	if err != nil {
		return 0, fmt.Errorf("master: remove finished jobs: %w", err)
	}
	return n.Deleted, nil
}

func write(ctx context.Context, t Target, term r.Term) (r.WriteResponse, error) {
	if err := ctx.Err(); err != nil {
		return r.WriteResponse{}, err
	}
	opts := t.RunOpts
	opts.Context = ctx
	res, err := term.RunWrite(t.Session, opts)
	return res, dberr.From(ctx, err)
}
