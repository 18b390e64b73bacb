package engine

import (
	"errors"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The queue's errors. Package queue exports an error of the same meaning and message for
// each (queue/errors.go), and makes what it returns match both.
var (
	ErrStopped          = errors.New("queue: stopped: create a new Queue with queue.New")
	ErrConnect          = errors.New("queue: cannot connect to RethinkDB")
	ErrInvalidOption    = invalid("queue: invalid option")
	ErrNoJobs           = invalid("queue: invalid: no jobs given")
	ErrNilJob           = invalid("queue: invalid: nil job")
	ErrNoIDs            = invalid("queue: invalid: no job ids given")
	ErrInvalidPredicate = invalid("queue: invalid predicate: want map[string]any or func(r.Term) r.Term")
	ErrProcessTwice     = errors.New("queue: Process called twice: a queue has one handler")
	ErrInvalidLimit     = invalid("queue: invalid limit")
	ErrInvalidSchedule  = invalid("queue: invalid schedule")
	ErrInvalidTrigger   = invalid("queue: invalid trigger")
	// ErrNoTriggerSource is a trigger's table or index that does not exist.
	ErrNoTriggerSource = rdb.ErrNoTriggerSource
	ErrInvalidState    = errors.New("queue: the State Document has an unknown state")
)

// invalidError is an error about the caller's input: its own message, and errors.Is
// matches job.ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return job.ErrInvalid }

func invalid(msg string) error { return &invalidError{msg} }
