package queue

import "github.com/rjqgo/rethinkdb-job-queue/internal/engine"

// Errors returned by the queue. Bad input wraps job.ErrInvalid as well, so
// errors.Is(err, job.ErrInvalid) separates every mistake of the caller from failures of
// the database.
var (
	// ErrStopped is returned by every method of a queue after Stop or Drop.
	ErrStopped = engine.ErrStopped
	// ErrConnect is wrapped by New when no RethinkDB server answers at the address.
	ErrConnect = engine.ErrConnect
	// ErrInvalidOption is wrapped by New, SetConcurrency and SetJobOptions when an option
	// is out of range.
	ErrInvalidOption = engine.ErrInvalidOption
	// ErrNoJobs is returned by AddJob called without jobs.
	ErrNoJobs = engine.ErrNoJobs
	// ErrNilJob is returned by AddJob when one of the jobs is nil.
	ErrNilJob = engine.ErrNilJob
	// ErrNoIDs is returned by the methods that take job ids when none are given.
	ErrNoIDs = engine.ErrNoIDs
	// ErrInvalidPredicate is returned by FindJob for a predicate that is neither a map nor
	// a ReQL function.
	ErrInvalidPredicate = engine.ErrInvalidPredicate
	// ErrInvalidState is the error of an error event raised when the State Document holds
	// a state other than paused, active or reviewed.
	ErrInvalidState = engine.ErrInvalidState
)
