package listing

import (
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Run is one attempt at a job, as the operator tools group its log: from the entry that made the job
// active to the entry that ended the run. An operator asking why a job failed wants each
// attempt's worker, time, outcome and error side by side, not scattered among progress
// and update entries.
type Run struct {
	// Attempt is the job's processCount after the run's claim: 1 for the first.
	Attempt int `json:"attempt"`
	// QueueID is the queue that ran it (hostname:db:queue:pid:uuid); Host and PID come
	// from it, empty and 0 when it is not of that form.
	QueueID string `json:"queueId,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Started is nil when the log no longer holds the run's start (LimitJobLogs
	// truncated it).
	Started *time.Time `json:"started,omitempty"`
	// Ended is nil while the run goes on.
	Ended *time.Time `json:"ended,omitempty"`
	// DurationMs is the run's length in milliseconds, as the log records it (the unit of
	// the database format); else from Started to Ended; 0 when neither is known.
	DurationMs float64 `json:"durationMs,omitempty"`
	// Outcome is the status the run left the job in (completed, failed, terminated,
	// cancelled, or waiting when repeated or passed back), "handed back" when its worker
	// stopped while it ran, "running" while it goes on, or "unknown" when the job moved on
	// without an entry that says how.
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
	// Reason says why the run ended when its entry alone does not: a run that a Queue
	// Master's review failed because its worker stopped answering.
	Reason       string `json:"reason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// ErrorStack is empty when the error had none (the log's "The error has no stack
	// detail" placeholder is left out).
	ErrorStack string `json:"errorStack,omitempty"`
	// Entries are the run's log entries.
	Entries []job.LogEntry `json:"-"`
}

// ParseQueueID splits a queue id, hostname:db:queue:pid:uuid, read from the right: db,
// queue and uuid hold no colon, while a host name (an IPv6 address) may.
func ParseQueueID(id string) (host string, pid int, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) < 5 {
		return "", 0, false
	}
	n := len(parts)
	pid, err := strconv.Atoi(parts[n-2])
	if err != nil {
		return "", 0, false
	}
	return strings.Join(parts[:n-4], ":"), pid, true
}

// Runs splits a job's log into the entries before its first run and its runs. A run
// starts at an active entry that says the job was retrieved, or at an active entry of a
// later processCount (a log written by some other client, or truncated); it ends at its first entry of
// another status. An ending entry with no start before it (a truncated log) makes a run
// of its own.
func Runs(j *job.Job) (before []job.LogEntry, runs []*Run) {
	var cur *Run
	for _, e := range j.Log {
		switch {
		case e.Status == job.Active && (e.Message == job.MessageActive || cur == nil || e.ProcessCount > cur.Attempt):
			if cur != nil && cur.Ended == nil {
				cur.Outcome = "unknown"
			}
			started, attempt := e.Date, e.ProcessCount
			if e.Message == job.MessageActive {
				// Both libraries write the count before the claim's increment in the
				// claim's entry, and the count after it in every later entry.
				attempt++
			}
			cur = &Run{Attempt: attempt, Started: &started, Outcome: "running"}
			cur.setQueue(e.QueueID)
			runs = append(runs, cur)
		case cur != nil && cur.Ended == nil && e.Status != job.Active && e.Status != "":
			cur.end(e)
		case isRunEnd(e) && (cur == nil || cur.Ended != nil):
			// The outcome of a run whose start the log no longer holds.
			cur = &Run{Attempt: e.ProcessCount}
			cur.setQueue(e.QueueID)
			cur.end(e)
			runs = append(runs, cur)
		case cur == nil:
			before = append(before, e)
			continue
		}
		cur.Entries = append(cur.Entries, e)
	}
	if cur != nil && cur.Ended == nil && j.Status != job.Active {
		cur.Outcome = "unknown"
	}
	return before, runs
}

// OrphanReason is a run's Reason when a Queue Master's review failed it.
const OrphanReason = "its worker stopped answering (no heartbeat or progress until its lease ended): a Queue Master's review failed the run"

// HandBackReason is the reason of a run its worker handed back as it stopped.
const HandBackReason = "its worker stopped while it ran (Queue.Stop): the job went back to the queue, no retry spent"

// Stack is an error stack as shown: empty for the placeholder the original writes when
// an error has none.
func Stack(s string) string {
	if s == job.MessageNoErrorStack {
		return ""
	}
	return s
}

// Time is how the tools print a time: RFC 3339 in UTC, to the millisecond as stored.
func Time(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// isRunEnd tells an entry that ends a run: one that records how long it took, or an
// error's details. Entries such as "added" or "reanimated" end none.
func isRunEnd(e job.LogEntry) bool {
	return e.Duration > 0 || e.ErrorMessage != "" || e.ErrorStack != ""
}

func (u *Run) setQueue(id string) {
	u.QueueID = id
	if host, pid, ok := ParseQueueID(id); ok {
		u.Host, u.PID = host, pid
	}
}

// end records the entry that ended the run.
func (u *Run) end(e job.LogEntry) {
	ended := e.Date
	u.Ended = &ended
	if e.ProcessCount > 0 {
		u.Attempt = e.ProcessCount // the count after the claim, the run's own
	}
	u.Outcome = string(e.Status)
	u.Message = e.Message
	u.ErrorMessage, u.ErrorStack = e.ErrorMessage, Stack(e.ErrorStack)
	switch e.Message {
	case rdb.MessageOrphan:
		u.Reason = OrphanReason
	case job.MessageWorkerStopped:
		u.Outcome, u.Reason = "handed back", HandBackReason
	}
	switch {
	case e.Duration > 0:
		u.DurationMs = float64(e.Duration) / float64(time.Millisecond)
	case u.Started != nil && ended.After(*u.Started):
		u.DurationMs = float64(ended.Sub(*u.Started)) / float64(time.Millisecond)
	}
	if u.QueueID == "" {
		u.setQueue(e.QueueID)
	}
}
