// Package docfmt is the vocabulary of a job document as the Node.js library stores it: the
// field names and how a stored number reads, for package job, the storage layer
// (internal/rdb) and the queue: the library's one list of them.
package docfmt

import (
	"encoding/json"
	"time"
)

// The job document's fields, as the Node.js library names them.
const (
	ID           = "id"
	Name         = "name"
	Priority     = "priority"
	Timeout      = "timeout"
	RetryDelay   = "retryDelay"
	RepeatDelay  = "repeatDelay"
	RetryMax     = "retryMax"
	RetryCount   = "retryCount"
	ProcessCount = "processCount"
	Repeat       = "repeat"
	Progress     = "progress"
	Status       = "status"
	Log          = "log"
	DateCreated  = "dateCreated"
	DateEnable   = "dateEnable"
	DateStarted  = "dateStarted"
	DateFinished = "dateFinished"
	QueueID      = "queueId"
	Data         = "data"
)

// The extra fields of this library's unique windows and debounce (job.SetUniqueFor,
// job.SetDebounce), in milliseconds, which the storage layer reads when it adds a job of
// a unique key. The Node.js library ignores them.
const (
	UniqueFor = "rjqUniqueFor"
	Debounce  = "rjqDebounce"
)

// Deadline is the extra field of a job's start deadline (job.SetDeadline), a time.
const Deadline = "rjqDeadline"

// Reserved reports whether name is one of the job fields the Node.js library defines (an
// extra field must not take one of these names).
func Reserved(name string) bool {
	switch name {
	case ID, Name, Priority, Timeout, RetryDelay, RepeatDelay, RetryMax, RetryCount,
		ProcessCount, Repeat, Progress, Status, Log, DateCreated, DateEnable, DateStarted,
		DateFinished, QueueID, Data:
		return true
	}
	return false
}

// Number reads any of the forms a number takes after decoding: float64 by default,
// json.Number when the session was opened with UseJSONNumber, Go integers for documents
// built in memory.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Millis is t in UTC cut to whole milliseconds, as RethinkDB keeps times: what is read back
// is then equal to what was written.
func Millis(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// Group is the extra field of a job's group (job.SetGroup), a string.
const Group = "rjqGroup"

// The extra fields of a job's sequence (job.SetSequence): its key, a string; its place,
// an integer of microseconds that AddJob stamps, increasing within a process; and the id
// of the job of the key that was last in the sequence when it was added, "" when none was
// unfinished (AddJob stamps it too; a document without it is placed by its place alone).
const (
	Sequence     = "rjqSequence"
	SequenceAt   = "rjqSequenceAt"
	SequencePrev = "rjqSequencePrev"
)

// The extra fields of workflows (job.SetDependsOn): a job's parents, an array of ids, and,
// once they completed, their completion log entries by id, which job.ParentResult reads.
const (
	DependsOn     = "rjqDependsOn"
	ParentResults = "rjqParentResults"
	// Children is the extra field of a parent: the ids of the jobs added with it among
	// their parents, so that the worker that completes it finds them without a query.
	Children = "rjqChildren"
)

// Trigger is the field of a job made by a trigger (queue.Trigger): {name, doc, at}, the
// trigger, the id of the document and the index value of the version it was made for.
const Trigger = "rjqTrigger"
