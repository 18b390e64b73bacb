package job

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about an invalid job, job option or job id, so one
// errors.Is(err, ErrInvalid) tells bad input apart from a database failure.
var ErrInvalid = errors.New("job: invalid")

// The invalid-option errors, one per option, each wrapping ErrInvalid. A setter given a bad
// value keeps the first such error on the job; Err and Queue.AddJob report it.
var (
	ErrInvalidID          = fmt.Errorf("%w id: want a version 1-5 UUID such as 5127d082-fe7e-4e88-b1de-7093029695c3", ErrInvalid)
	ErrInvalidName        = fmt.Errorf("%w name: must not be empty", ErrInvalid)
	ErrInvalidPriority    = fmt.Errorf("%w priority: want one of highest(10), high(20), medium(30), normal(40), low(50), lowest(60)", ErrInvalid)
	ErrInvalidTimeout     = fmt.Errorf("%w timeout: must not be negative", ErrInvalid)
	ErrInvalidRetryMax    = fmt.Errorf("%w retryMax: must be within 0..2^53-1", ErrInvalid)
	ErrInvalidRetryDelay  = fmt.Errorf("%w retryDelay: must not be negative", ErrInvalid)
	ErrInvalidRepeat      = fmt.Errorf("%w repeat: want 0 (no repeat), a positive count up to 2^53-1, or RepeatForever", ErrInvalid)
	ErrInvalidRepeatDelay = fmt.Errorf("%w repeatDelay: must not be negative", ErrInvalid)
	ErrInvalidDateEnable  = fmt.Errorf("%w dateEnable: must be set, within the years the driver can store (1678 to 2262)", ErrInvalid)
	ErrInvalidField       = fmt.Errorf("%w field", ErrInvalid)
	ErrInvalidDocument    = fmt.Errorf("%w document: not a job", ErrInvalid)
)

// Errors about a job's state in the queue.
var (
	// ErrNotAdded is returned by the methods that save a job when the job was never added to
	// a queue (its status is still Created): add it with Queue.AddJob first.
	ErrNotAdded = errors.New("job: not added to the queue (status created): add it with Queue.AddJob first")
	// ErrNotActive is returned by UpdateProgress when the job is not being processed.
	ErrNotActive = errors.New("job: not at an active status: progress can only be updated while the job is processed")
	// ErrNotFound is returned when a job id is not in the queue's table (never added, or
	// removed since).
	ErrNotFound = errors.New("job: not found in the queue")
	// ErrExists is returned by Queue.AddJob when a job with the same id is already in the
	// queue's table; nothing is added.
	ErrExists = errors.New("job: a job with this id is already in the queue")
	// ErrDetached is returned by the methods that save a job when the job belongs to no
	// queue: get jobs from Queue.CreateJob, GetJob or FindJob.
	ErrDetached = errors.New("job: not attached to a queue: create it with Queue.CreateJob or read it with Queue.GetJob")
)

// Errors of processing.
var (
	// ErrCancel is wrapped by the error of Cancel: a handler that returns it cancels its job
	// instead of failing it.
	ErrCancel = errors.New("job: cancelled by its handler")
	// ErrCancelled is the cause of a handler's context when its job is cancelled (by
	// Queue.CancelJob, here or in another process).
	ErrCancelled = errors.New("job: cancelled")
	// ErrTimeout is the cause of a handler's context when the job's timeout passes; the job
	// is failed at that moment.
	ErrTimeout = errors.New("job: timed out")
)

// Cancel returns an error for a handler to return that cancels its job with reason as the
// log message (the original's "Job cancelled by Queue process handler" when empty).
func Cancel(reason string) error { return &cancelError{reason: reason} }

type cancelError struct{ reason string }

func (e *cancelError) Error() string {
	if e.reason == "" {
		return ErrCancel.Error()
	}
	return ErrCancel.Error() + ": " + e.reason
}

func (e *cancelError) Is(target error) bool { return target == ErrCancel }

// CancelReason is the log message of a handler's cancel: its reason, or the original's
// "Job cancelled by Queue process handler" when it gave none. Package queue finds it
// through this method, so the type stays unexported.
func (e *cancelError) CancelReason() string {
	if e.reason == "" {
		return MessageCancel
	}
	return e.reason
}
