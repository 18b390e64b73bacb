package rdb

import (
	"strconv"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// NewLog returns a log entry dated now, stamped with the job's counters and the given
// queue id. Empty message, type and status take the original's defaults: "See the data
// attached to this log entry", Information, and the job's status.
func NewLog(j *job.Job, queueID string, data any, message string, typ job.LogType, status job.Status) job.LogEntry {
	if message == "" {
		message = job.MessageSeeLogData
	}
	if typ == "" {
		typ = job.Information
	}
	if status == "" {
		status = j.Status
	}
	return job.LogEntry{
		Date:         docfmt.Millis(time.Now()),
		QueueID:      queueID,
		Message:      message,
		Data:         data,
		Type:         typ,
		Status:       status,
		RetryCount:   j.RetryCount,
		ProcessCount: j.ProcessCount,
	}
}

// CompletionEntry is the log entry of a successful run of j (claimed), stamped as t says:
// the original's "completed" entry with the run's duration and result as its data. A
// result that cannot be stored is left out and the entry's errorMessage says why, so that
// Job.Result reports it (job.ErrResultNotStored) instead of finding nothing; the returned
// error is then that reason, for the caller to log.
func CompletionEntry(j *job.Job, queueID string, result any, t Transition, duration time.Duration) (job.LogEntry, error) {
	err := job.CheckValue(result)
	if err != nil {
		result = nil
	}
	e := NewLog(j, queueID, result, job.MessageCompleted, t.LogType, t.Status).WithDuration(duration)
	if err != nil {
		e.ErrorMessage = job.ResultNotStoredPrefix + err.Error()
	}
	return e, err
}

// TruncatedLog is the entry appended when a job's log reaches the queue's limit.
func TruncatedLog(j *job.Job, queueID string, limit int, status job.Status) job.LogEntry {
	return NewLog(j, queueID, retainingMessage(limit), job.MessageLogsTruncated, job.Information, status)
}

func retainingMessage(limit int) string {
	return "Retaining " + strconv.Itoa(limit) + " log entries"
}

// AppendLog appends e to log and applies the log limit the way the original does: when the
// log already holds limit entries or more, trunc is appended too and only the newest limit
// entries are kept. A limit below 1 keeps everything.
func AppendLog(log []job.LogEntry, e job.LogEntry, limit int, trunc job.LogEntry) []job.LogEntry {
	if limit < 1 || len(log) < limit {
		return append(log, e)
	}
	log = append(log, e, trunc)
	return append([]job.LogEntry(nil), log[len(log)-limit:]...)
}

// AppendLogTerm is AppendLog inside a query: it appends entry to the log term and applies
// limit the same way, with trunc as the truncation entry (documents or terms).
func AppendLogTerm(log r.Term, entry, trunc any, limit int) r.Term {
	if limit < 1 {
		return log.Append(entry)
	}
	return r.Branch(log.Count().Ge(limit),
		log.Append(entry).Append(trunc).Slice(-limit),
		log.Append(entry))
}

// Stamps are the values of a log entry that a query takes from the row it changes: terms
// (or plain values) for the entry's date, status, type, retryCount and processCount. A nil
// Type is Information.
type Stamps struct {
	Date, Status, Type, RetryCount, ProcessCount any
}

// RowLog builds a log entry with message inside a query, stamped as st says, and the
// truncation entry that goes with it (for AppendLogTerm). With noData the entry has no
// "data" field, as the original's cancel and Master entries.
func RowLog(queueID string, limit int, message string, st Stamps, noData bool) (entry, trunc r.Term) {
	var none job.Job
	stamps := map[string]any{"date": st.Date, "status": st.Status, "retryCount": st.RetryCount, "processCount": st.ProcessCount}
	e := NewLog(&none, queueID, nil, message, job.Information, "")
	if noData {
		e = e.WithoutData()
	}
	entry = r.Expr(e.Document()).Merge(stamps)
	if st.Type != nil {
		entry = entry.Merge(map[string]any{"type": st.Type})
	}
	return entry, r.Expr(TruncatedLog(&none, queueID, limit, "").Document()).Merge(stamps)
}
