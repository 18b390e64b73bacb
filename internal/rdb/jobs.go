package rdb

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// fieldOr is obj's field, or def when obj has none (or it is null). Not Field(…).Default:
// the server raises an error for a missing field, which Default catches, and on RethinkDB
// 2.4.4 each costs about 0.1 ms of CPU (a take of fifty keys none of which held a slot
// spent 6 of its 7 ms on them).
func fieldOr(obj r.Term, field, def any) r.Term {
	return r.Branch(obj.HasFields(field), obj.Field(field), def)
}

// ownedBy is true while the job doc is active in the run that made the processCount'th
// claim: nobody cancelled it, failed it in a review, or claimed it again since.
func ownedBy(doc r.Term, processCount any) r.Term {
	return doc.Field("status").Default(nil).Eq(string(job.Active)).And(doc.Field("processCount").Default(nil).Eq(processCount))
}

// ReplaceJob writes every field of j, stamped with this queue's id, and appends e with the
// replaced values (without their log) as its data, in one replace, so that the old values
// and the new ones cannot interleave with another writer's. A positive owner writes only
// while the job is still active in the run that made that processCount (the result is
// then Unchanged otherwise). It returns the changes.
func (t *Table) ReplaceJob(ctx context.Context, j *job.Job, e job.LogEntry, owner int) (WriteResult, error) {
	j.QueueID = t.QueueID
	doc := j.Document()
	trunc := TruncatedLog(j, t.QueueID, t.LimitJobLogs, j.Status)
	return t.Write(ctx, t.Term().Get(j.ID).Replace(func(old r.Term) any {
		entry := r.Expr(e.Document()).Merge(map[string]any{"data": old.Without("log")})
		owned := r.Expr(true)
		if owner > 0 {
			owned = ownedBy(old, owner)
		}
		return r.Branch(old.Eq(nil), nil,
			owned, r.Expr(doc).Merge(map[string]any{"log": t.AppendLog(r.Expr(doc["log"]), entry, trunc.Document())}),
			old)
	}, r.ReplaceOpts{ReturnChanges: true}))
}

// AppendJobLog appends e to the log of the stored job j; the result is Skipped when the
// job is not in the table. It returns the truncation entry that goes with e, to apply the
// same limit to j.Log.
func (t *Table) AppendJobLog(ctx context.Context, j *job.Job, e job.LogEntry) (WriteResult, job.LogEntry, error) {
	trunc := TruncatedLog(j, t.QueueID, t.LimitJobLogs, e.Status)
	res, err := t.Write(ctx, t.Term().Get(j.ID).Update(func(row r.Term) any {
		return map[string]any{"log": t.AppendLog(row.Field("log"), e.Document(), trunc.Document()), "queueId": t.QueueID}
	}))
	return res, trunc, err
}

// WriteProgress stores the progress of j's current run with the entry "Job progress
// updated" (the old value as its data), and moves its dateEnable to leaseEnd; only while
// the run owns the job (the result is Unchanged otherwise). It returns the changes.
func (t *Table) WriteProgress(ctx context.Context, j *job.Job, percent float64, leaseEnd time.Time) (WriteResult, error) {
	e := NewLog(j, t.QueueID, nil, job.MessageProgress, job.Information, job.Active)
	trunc := TruncatedLog(j, t.QueueID, t.LimitJobLogs, job.Active)
	return t.Write(ctx, t.Term().Get(j.ID).Update(func(row r.Term) any {
		entry := r.Expr(e.Document()).Merge(map[string]any{"data": row.Field("progress")})
		return r.Branch(ownedBy(row, j.ProcessCount), map[string]any{
			"queueId":    t.QueueID,
			"progress":   percent,
			"dateEnable": leaseEnd,
			"log":        t.AppendLog(row.Field("log"), entry, trunc.Document()),
		}, map[string]any{})
	}, r.UpdateOpts{ReturnChanges: true}))
}
