package job

import (
	"fmt"
	"math"
	"time"
)

// The log messages of the original library, written verbatim so that logs read the same
// whichever language wrote them.
const (
	MessageAdded = "Job added to the queue"
	// MessageAddedBlocked is this library's "added" message for a job of a workflow, added
	// blocked (SetDependsOn): the entry is the original's added entry in all else.
	MessageAddedBlocked = "Job added to the queue: it waits for its parents to complete"
	MessageActive       = "Job retrieved and active"
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
	// MessageDeadlinePassed is the reason, and log message, of a job cancelled because
	// its start deadline passed (SetDeadline).
	MessageDeadlinePassed = "deadline passed"
	// MessageReleased is the log message of a job of a workflow whose parents have all
	// completed: it is waiting from then on (SetDependsOn).
	MessageReleased = "Job released: every parent completed"
	// MessageBlockedAgain is the log message of a job of a workflow put back blocked
	// after a claim whose parent's outcome did not land (a write whose answer was lost).
	MessageBlockedAgain = "Job blocked again: a parent had not completed"
	// MessageWorkerStopped is the log message of a job handed back by a worker that
	// stopped while it ran (Queue.Stop): waiting again at once, with no retry spent.
	MessageWorkerStopped = "Worker stopped: the job was handed back to the queue unfinished"
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

	// meta is what the stored entry carries beyond these fields, so that an entry read
	// from the database is written back as it was.
	meta logMeta
}

// logMeta is what a stored log entry carries beyond LogEntry's exported fields. It is
// hidden because only the round trip needs it: Document writes back what
// LogEntryFromDocument read, and the With methods mark what a new entry carries.
type logMeta struct {
	has optionalFields
	// extra holds the fields LogEntry does not model (the Master's entries carry
	// "dateEnable", for one), written back untouched.
	extra map[string]any
}

// optionalFields records which optional fields an entry carries, so that an entry read
// from the database is written back with the same fields, a zero value included.
type optionalFields uint8

// The optional fields of a log entry.
const (
	hasDuration optionalFields = 1 << iota
	hasErrorMessage
	hasErrorStack
	// noData marks an entry stored without a "data" field, as the original stores its
	// claim and cancel entries; it is written back without one while its Data is nil.
	noData
)

// WithDuration returns e carrying a run's duration, as the original's completion and
// failure entries do: stored even when zero.
func (e LogEntry) WithDuration(d time.Duration) LogEntry {
	e.Duration = d
	e.meta.has |= hasDuration
	return e
}

// WithError returns e carrying an error's message and stack, as the original's failure
// entries do: both stored, even when empty.
func (e LogEntry) WithError(message, stack string) LogEntry {
	e.ErrorMessage, e.ErrorStack = message, stack
	e.meta.has |= hasErrorMessage | hasErrorStack
	return e
}

// WithoutData returns e stored without a "data" field while its Data is nil, as the
// original stores its claim and cancel entries.
func (e LogEntry) WithoutData() LogEntry {
	e.meta.has |= noData
	return e
}

// Document returns the entry as the Node.js library stores it in a job's "log" array:
// the date in UTC to the millisecond (null when zero), the duration in milliseconds.
// "duration", "errorMessage" and "errorStack" are written when set, or when the entry
// carries them (see WithDuration, WithError, LogEntryFromDocument); "data" is left out
// when Data is nil and the entry was stored without it (see WithoutData). It is exported
// for the storage layer, which writes entries; fields read by LogEntryFromDocument that
// LogEntry does not model are written back too.
func (e LogEntry) Document() map[string]any {
	m := e.meta
	doc := make(map[string]any, 11+len(m.extra))
	for k, v := range m.extra {
		doc[k] = v
	}
	doc["date"] = storedTime(e.Date)
	doc["queueId"] = e.QueueID
	doc["message"] = e.Message
	if e.Data != nil || m.has&noData == 0 {
		doc["data"] = stored(e.Data)
	}
	doc["type"] = string(e.Type)
	doc["status"] = string(e.Status)
	doc["retryCount"] = e.RetryCount
	doc["processCount"] = e.ProcessCount
	if m.has&hasDuration != 0 || e.Duration != 0 {
		doc["duration"] = e.Duration.Milliseconds()
	}
	if m.has&hasErrorMessage != 0 || e.ErrorMessage != "" {
		doc["errorMessage"] = e.ErrorMessage
	}
	if m.has&hasErrorStack != 0 || e.ErrorStack != "" {
		doc["errorStack"] = e.ErrorStack
	}
	return doc
}

// storedTime is how a time is stored: null when zero, else in UTC to the millisecond.
func storedTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return toMillis(t)
}

// LogEntryFromDocument reads a log entry from one element of a stored job's "log" array,
// as rethinkdb-go returns it (written by this library or by the Node.js one): numbers
// as float64 or json.Number, times as time.Time (read in UTC). The entry remembers which
// optional fields the element had and keeps the fields LogEntry does not model, so that
// Document writes it back as it was. It returns an error wrapping ErrInvalidDocument for
// a field of the wrong type. It is exported for the storage layer, which reads jobs.
func LogEntryFromDocument(m map[string]any) (LogEntry, error) {
	d := fieldReader{m: m}
	e := LogEntry{
		Date:         d.time("date"),
		QueueID:      d.str("queueId"),
		Message:      d.str("message"),
		Data:         m["data"],
		Type:         LogType(d.str("type")),
		Status:       Status(d.str("status")),
		RetryCount:   d.int("retryCount"),
		ProcessCount: d.int("processCount"),
		Duration:     d.millis("duration"),
		ErrorMessage: d.str("errorMessage"),
		ErrorStack:   d.str("errorStack"),
	}
	if d.err != nil {
		return LogEntry{}, d.err
	}
	if _, ok := m["data"]; !ok {
		e.meta.has |= noData
	}
	for k, v := range m {
		switch k {
		case "date", "queueId", "message", "data", "type", "status", "retryCount", "processCount":
		case "duration":
			e.meta.has |= hasDuration
		case "errorMessage":
			e.meta.has |= hasErrorMessage
		case "errorStack":
			e.meta.has |= hasErrorStack
		default:
			if e.meta.extra == nil {
				e.meta.extra = make(map[string]any)
			}
			e.meta.extra[k] = v
		}
	}
	return e, nil
}

// fieldReader reads typed fields from a stored job or log entry, keeping the first type
// error.
type fieldReader struct {
	m   map[string]any
	err error
}

func (d *fieldReader) bad(field string, v any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: field %q has %T %v", ErrInvalidDocument, field, v, v)
	}
}

func (d *fieldReader) str(field string) string {
	switch v := d.m[field].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		d.bad(field, v)
		return ""
	}
}

func (d *fieldReader) float(field string) float64 {
	v := d.m[field]
	if v == nil {
		return 0
	}
	f, ok := number(v)
	if !ok {
		d.bad(field, v)
	}
	return f
}

func (d *fieldReader) int(field string) int {
	return int(math.Round(d.float(field)))
}

func (d *fieldReader) millis(field string) time.Duration {
	return time.Duration(math.Round(d.float(field) * float64(time.Millisecond)))
}

func (d *fieldReader) time(field string) time.Time {
	switch v := d.m[field].(type) {
	case nil:
		return time.Time{}
	case time.Time:
		return v.UTC()
	default:
		d.bad(field, v)
		return time.Time{}
	}
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
