package job

import (
	"strconv"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// The log messages of the original library, written verbatim so that logs read the same
// whichever language wrote them.
const (
	MessageAdded  = "Job added to the queue"
	MessageActive = "Job retrieved and active"
	// MessageCompleted is what the original writes on completion: the status name (its
	// "Job completed successfully" constant is never used).
	MessageCompleted     = "completed"
	MessageFailed        = "Job processing failed"
	MessageCancel        = "Job cancelled by Queue process handler"
	MessageSeeLogData    = "See the data attached to this log entry"
	MessageUpdated       = "Job updated. Old values in log data"
	MessagePassBack      = "Job has not been processed to completion and is being placed back into the queue"
	MessageProgress      = "Job progress updated. Old value in log data"
	MessageReanimated    = "Job has been reanimated"
	MessageLogsTruncated = "Job logs have been truncated"
	MessageNoErrorStack  = "The error has no stack detail"
	MessageNoErrorMsg    = "The error has no message"
)

// LogEntry is one entry of a job's log, stored in the document's "log" array.
type LogEntry struct {
	Date         time.Time
	QueueID      string
	Message      string
	Data         any
	Type         LogType
	Status       Status
	RetryCount   int
	ProcessCount int
	// Duration, ErrorMessage and ErrorStack are set on failure entries; Duration also on
	// completion entries.
	Duration     time.Duration
	ErrorMessage string
	ErrorStack   string

	// has records which optional fields the stored entry carries, so that an entry read
	// from the database is written back with the same fields.
	has optionalFields
	// extra holds the fields this package does not know (the Master's entries carry
	// "dateEnable", for one), written back untouched.
	extra map[string]any
}

type optionalFields uint8

const (
	hasDuration optionalFields = 1 << iota
	hasErrorMessage
	hasErrorStack
	// noData marks an entry read without a "data" field, as the Node.js library's cancel
	// and Master entries are stored; it is written back without one while Data is nil.
	noData
)

// NewLog returns a log entry dated now, stamped with the job's counters and the given
// queue id. Empty message, type and status take the original's defaults: "See the data
// attached to this log entry", Information, and the job's status.
func NewLog(j *Job, queueID string, data any, message string, typ LogType, status Status) LogEntry {
	if message == "" {
		message = MessageSeeLogData
	}
	if typ == "" {
		typ = Information
	}
	if status == "" {
		status = j.Status
	}
	return LogEntry{
		Date:         toMillis(time.Now()),
		QueueID:      queueID,
		Message:      message,
		Data:         data,
		Type:         typ,
		Status:       status,
		RetryCount:   j.RetryCount,
		ProcessCount: j.ProcessCount,
	}
}

// WithDuration returns e carrying a run's duration, as completion and failure entries do.
func (e LogEntry) WithDuration(d time.Duration) LogEntry {
	e.Duration = d
	e.has |= hasDuration
	return e
}

// WithError returns e carrying an error's message and stack, as failure entries do.
func (e LogEntry) WithError(message, stack string) LogEntry {
	e.ErrorMessage, e.ErrorStack = message, stack
	e.has |= hasErrorMessage | hasErrorStack
	return e
}

// WithoutData returns e stored without a "data" field while its Data is nil, as the
// original stores its claim and cancel entries.
func (e LogEntry) WithoutData() LogEntry {
	e.has |= noData
	return e
}

// TruncatedLog is the entry appended when a job's log reaches the queue's limit.
func TruncatedLog(j *Job, queueID string, limit int, status Status) LogEntry {
	return NewLog(j, queueID, retainingMessage(limit), MessageLogsTruncated, Information, status)
}

func retainingMessage(limit int) string {
	return "Retaining " + strconv.Itoa(limit) + " log entries"
}

// AppendLog appends e to log and applies the log limit the way the original does: when the
// log already holds limit entries or more, trunc is appended too and only the newest limit
// entries are kept. A limit below 1 keeps everything.
func AppendLog(log []LogEntry, e LogEntry, limit int, trunc LogEntry) []LogEntry {
	if limit < 1 || len(log) < limit {
		return append(log, e)
	}
	log = append(log, e, trunc)
	return append([]LogEntry(nil), log[len(log)-limit:]...)
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

// GetLastLog returns the newest entry of the job's log (by date; the later one of two
// entries with the same date), or nil when the log is empty.
func (j *Job) GetLastLog() *LogEntry {
	var last *LogEntry
	for i := range j.Log {
		if last == nil || !j.Log[i].Date.Before(last.Date) {
			last = &j.Log[i]
		}
	}
	return last
}
