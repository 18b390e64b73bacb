package queue

import (
	"errors"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Errors returned by the queue. Bad input wraps job.ErrInvalid as well, so
// errors.Is(err, job.ErrInvalid) separates every mistake of the caller from failures of
// the database.
var (
	// ErrStopped is returned by every method of a queue after Stop or Drop.
	ErrStopped = errors.New("queue: stopped: create a new Queue with queue.New")
	// ErrConnect is wrapped by New when no RethinkDB server answers at the address.
	ErrConnect = errors.New("queue: cannot connect to RethinkDB")
	// ErrInvalidOption is wrapped by New, ParseURL, SetConcurrency and SetJobOptions when
	// an option is out of range.
	ErrInvalidOption = invalid("queue: invalid option")
	// ErrNoJobs is returned by AddJob called without jobs.
	ErrNoJobs = invalid("queue: invalid: no jobs given")
	// ErrNilJob is returned by AddJob when one of the jobs is nil.
	ErrNilJob = invalid("queue: invalid: nil job")
	// ErrNoIDs is returned by the methods that take job ids when none are given.
	ErrNoIDs = invalid("queue: invalid: no job ids given")
	// ErrInvalidPredicate is returned by FindJob for a predicate that is neither a map nor
	// a ReQL function.
	ErrInvalidPredicate = invalid("queue: invalid predicate: want map[string]any or func(r.Term) r.Term")
	// ErrInvalidState is the error of an error event raised when the State Document holds
	// a state other than paused, active or reviewed.
	ErrInvalidState = errors.New("queue: the State Document has an unknown state")
)

// invalidError is an error about the caller's input: its own message, and errors.Is
// matches job.ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return job.ErrInvalid }

func invalid(msg string) error { return &invalidError{msg} }

// The engine behind a Queue has errors of its own; public gives each the queue's
// exported error of the same meaning, so that errors.Is(err, queue.ErrX) holds for what
// the queue returns, its message unchanged.
var publicErrors = []struct{ internal, public error }{
	{engine.ErrStopped, ErrStopped},
	{engine.ErrConnect, ErrConnect},
	{engine.ErrInvalidOption, ErrInvalidOption},
	{engine.ErrNoJobs, ErrNoJobs},
	{engine.ErrNilJob, ErrNilJob},
	{engine.ErrNoIDs, ErrNoIDs},
	{engine.ErrInvalidPredicate, ErrInvalidPredicate},
	{engine.ErrInvalidState, ErrInvalidState},
	{engine.ErrProcessTwice, ErrProcessTwice},
	{engine.ErrInvalidLimit, ErrInvalidLimit},
	{engine.ErrInvalidSchedule, ErrInvalidSchedule},
	{engine.ErrInvalidTrigger, ErrInvalidTrigger},
	{engine.ErrNoTriggerSource, ErrNoTriggerSource},
	{processor.ErrPassBack, ErrPassBack},
}

// publicError is an engine's error seen as the queue's: it reads as the engine's, and
// unwraps to it and to the queue's error of the same meaning.
type publicError struct{ err, public error }

func (e *publicError) Error() string   { return e.err.Error() }
func (e *publicError) Unwrap() []error { return []error{e.err, e.public} }

// publicErr is err with the queue's errors in place of the engine's (see publicErrors),
// and a handler's panic as a *PanicError.
func publicErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *processor.PanicError
	if errors.As(err, &pe) {
		return &PanicError{Value: pe.Value, Stack: pe.Stack}
	}
	for _, p := range publicErrors {
		if errors.Is(err, p.internal) && !errors.Is(err, p.public) {
			return &publicError{err, p.public}
		}
	}
	return err
}

// public is publicErr for a call that returns a value and an error.
func public[T any](v T, err error) (T, error) { return v, publicErr(err) }
