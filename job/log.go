package job

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/bridge"
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

	// meta is what the stored entry carries beyond these fields, so that an entry read
	// from the database is written back as it was.
	meta bridge.LogMeta
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
