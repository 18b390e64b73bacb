package changefeed

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Kind is what a change means to a queue. The job kinds have the names of the events they
// raise.
type Kind string

// The kinds of change.
const (
	// Ignore is a change to raise nothing for: made by this queue (it raised its events
	// already), the State Document's deletion, or a change no rule covers.
	Ignore Kind = ""

	Added      Kind = "added"
	Active     Kind = "active"
	Progress   Kind = "progress"
	Completed  Kind = "completed"
	Cancelled  Kind = "cancelled"
	Failed     Kind = "failed"
	Terminated Kind = "terminated"
	Removed    Kind = "removed"
	Log        Kind = "log"
	// Released is a job of a workflow whose parents all completed: blocked before,
	// waiting now (job.SetDependsOn).
	Released Kind = "released"

	// Paused, Resumed and Reviewed are State Document changes: pause this queue, resume it,
	// or claim again after another queue's review.
	Paused   Kind = "paused"
	Resumed  Kind = "resumed"
	Reviewed Kind = "reviewed"
	// InvalidState is a State Document with a state none of the above.
	InvalidState Kind = "invalid state"
)

// Change is one change of the feed: the document before and after (nil when absent).
type Change struct {
	Old map[string]any
	New map[string]any
}

// Action is what a queue does about a change.
type Action struct {
	Kind Kind
	// QueueID is the queue that made the change; empty for Removed.
	QueueID string
	JobID   string
	// Progress is the job's new progress, for Progress.
	Progress float64
	// IsRepeating tells, for Completed, whether the job runs again.
	IsRepeating bool
	// Reason is the message of a Cancelled job's last log entry (the cancel's reason), and
	// the error message of a Failed or Terminated job's last log entry (the run's error;
	// its message when it has none).
	Reason string
	// Claimable is true when the change made a job waiting or failed (added, reanimated,
	// passed back, failed for a retry): a queue with free slots should claim again.
	Claimable bool
	// ProcessCount is the job's processCount after the change (before it, for Removed),
	// and Active tells whether the job is still active: a queue running the job in an
	// earlier claim, or in that claim when the job is no longer active, has lost it.
	ProcessCount int
	Active       bool
}

// Classify applies the original library's rules to a change seen by the queue self.
// Changes made by self are ignored: self raised their events already. A job whose
// dateCreated changed is a new job in the old one's place (a unique key's job replaced:
// job.SetUniqueKey, job.SetDebounce), Added. Two deliberate differences:
//   - a status change is tested before a progress change. The original tested progress
//     first, so a job completed elsewhere (progress 0 → 100) reached listeners as progress
//     and never as completed, which broke its own documented global completed example;
//   - a deleted job is Removed whoever deleted it, with no QueueID: a deletion does not say
//     who made it (the original went by the last queue to change the job, and so missed
//     removals of jobs self had changed last). The queue filters out its own deletions.
func Classify(c Change, self string) Action {
	if c.New == nil {
		if isJob(c.Old) {
			return Action{Kind: Removed, JobID: str(c.Old, "id"), ProcessCount: int(num(c.Old, "processCount"))}
		}
		return Action{}
	}
	queueID := str(c.New, "queueId")
	if queueID == "" || queueID == self {
		return Action{}
	}
	if str(c.New, "id") == job.StateDocumentID {
		return Action{Kind: stateKind(str(c.New, "state")), QueueID: queueID}
	}
	act := Action{QueueID: queueID, JobID: str(c.New, "id")}
	newJob, oldJob := isJob(c.New), isJob(c.Old)
	newStatus, oldStatus := status(c.New, newJob), status(c.Old, oldJob)
	act.Claimable = (newStatus == job.Waiting || newStatus == job.Failed) && newStatus != oldStatus
	act.ProcessCount, act.Active = int(num(c.New, "processCount")), newStatus == job.Active
	switch {
	case newJob && !oldJob:
		act.Kind = Added
	case newJob && oldJob && !c.New["dateCreated"].(time.Time).Equal(c.Old["dateCreated"].(time.Time)):
		// A new job in the place of the old (a unique key's finished job replaced, or a
		// waiting one debounced): an add, whatever else changed.
		act.Kind = Added
		act.Claimable = newStatus == job.Waiting || newStatus == job.Failed
	case oldStatus == job.Blocked && newStatus == job.Waiting:
		act.Kind = Released
	case newStatus != oldStatus && statusKind(newStatus) != Ignore:
		act.Kind = statusKind(newStatus)
		switch act.Kind {
		case Completed:
			act.IsRepeating = repeating(c.New)
		case Cancelled:
			act.Reason = lastMessage(c.New)
		case Failed, Terminated:
			act.Reason = lastError(c.New)
		}
	case newJob && oldJob && num(c.New, "progress") != num(c.Old, "progress"):
		act.Kind = Progress
		act.Progress = num(c.New, "progress")
	case newJob && oldJob && logLen(c.New) > logLen(c.Old):
		act.Kind = Log
	}
	return act
}

func stateKind(state string) Kind {
	switch state {
	case "paused":
		return Paused
	case "active":
		return Resumed
	case "reviewed":
		return Reviewed
	}
	return InvalidState
}

// statusKind is the kind a change into status s raises, Ignore for waiting.
func statusKind(s job.Status) Kind {
	switch s {
	case job.Active:
		return Active
	case job.Completed:
		return Completed
	case job.Cancelled:
		return Cancelled
	case job.Failed:
		return Failed
	case job.Terminated:
		return Terminated
	}
	return Ignore
}

// isJob is the original's test of a job document: a job id, a queue id, a creation date,
// a priority and a job status.
func isJob(doc map[string]any) bool {
	if doc == nil || !job.ValidID(str(doc, "id")) || str(doc, "queueId") == "" {
		return false
	}
	if _, ok := doc["dateCreated"].(time.Time); !ok {
		return false
	}
	switch doc["priority"].(type) {
	case float64, string, int:
	default:
		return false
	}
	return job.Status(str(doc, "status")).Valid()
}

func status(doc map[string]any, isJob bool) job.Status {
	if !isJob {
		return ""
	}
	return job.Status(str(doc, "status"))
}

// repeating is job.Job.Repeating on a document.
func repeating(doc map[string]any) bool {
	switch v := doc["repeat"].(type) {
	case bool:
		return v
	case float64:
		return v > 0 && num(doc, "processCount") <= v
	}
	return false
}

func str(doc map[string]any, key string) string {
	s, _ := doc[key].(string)
	return s
}

func num(doc map[string]any, key string) float64 {
	f, _ := doc[key].(float64)
	return f
}

// lastMessage is the message of the job's last log entry: from the feed's projection, or
// from the log of a whole document.
func lastMessage(doc map[string]any) string {
	if m, ok := doc[lastMessageField].(string); ok {
		return m
	}
	log, _ := doc["log"].([]any)
	if len(log) == 0 {
		return ""
	}
	e, _ := log[len(log)-1].(map[string]any)
	return str(e, "message")
}

// lastError is the error message of doc's last log entry, else its message: as the
// projected feed sends it (see project), or read from the log.
func lastError(doc map[string]any) string {
	if m, ok := doc[lastMessageField].(string); ok {
		return m
	}
	log, _ := doc["log"].([]any)
	if len(log) == 0 {
		return ""
	}
	e, _ := log[len(log)-1].(map[string]any)
	if m := str(e, "errorMessage"); m != "" {
		return m
	}
	return str(e, "message")
}

func logLen(doc map[string]any) int {
	if n, ok := doc[logLengthField].(float64); ok {
		return int(n)
	}
	log, _ := doc["log"].([]any)
	return len(log)
}
