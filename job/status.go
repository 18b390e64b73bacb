package job

// Status is a job's place in its life cycle, stored in the document's "status" field.
type Status string

// The job statuses of the original library.
const (
	// Created is a job that exists only in memory: it has not been added to a queue.
	Created Status = "created"
	// Waiting is a job in the queue, ready once its DateEnable has passed.
	Waiting Status = "waiting"
	// Active is a job that a worker has claimed and is processing.
	Active Status = "active"
	// Completed is a job whose handler succeeded.
	Completed Status = "completed"
	// Cancelled is a job that was cancelled by CancelJob or by its handler.
	Cancelled Status = "cancelled"
	// Failed is a job whose last run failed and that will be retried.
	Failed Status = "failed"
	// Terminated is a job that failed and has no retries left.
	Terminated Status = "terminated"
)

// Blocked is a job of a workflow that waits for its parents (SetDependsOn): no worker, of
// this library or the Node.js one, claims it, since both claim only waiting and failed
// jobs. It becomes waiting (a "released" event) once every parent has completed, and is
// cancelled when one will never complete. This status is this library's; the original
// has none like it.
const Blocked Status = "blocked"

// Valid reports whether s is one of the seven statuses of the original, or Blocked.
func (s Status) Valid() bool {
	switch s {
	case Created, Waiting, Active, Completed, Cancelled, Failed, Terminated, Blocked:
		return true
	}
	return false
}

// Finished reports whether s is an end state: completed, cancelled or terminated.
func (s Status) Finished() bool {
	return s == Completed || s == Cancelled || s == Terminated
}

// LogType is the severity of a log entry.
type LogType string

// The log entry types of the original library.
const (
	Information LogType = "information"
	Warning     LogType = "warning"
	Error       LogType = "error"
)

// StateDocumentID is the id of the queue's State Document, the one document in a queue's
// table that is not a job (it records whether the queue is paused). Tools that read the
// table directly skip it by this id.
const StateDocumentID = "86f6ff5b-0c4e-46ad-9a5f-e90eb19c9b00"
