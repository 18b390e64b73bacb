package queue

import (
	"errors"
	"fmt"

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
	// ErrInvalidOption is wrapped by New, SetConcurrency and SetJobOptions when an option
	// is out of range.
	ErrInvalidOption = fmt.Errorf("%w option", job.ErrInvalid)
	// ErrNoJobs is returned by AddJob called without jobs.
	ErrNoJobs = fmt.Errorf("%w: no jobs given", job.ErrInvalid)
	// ErrNilJob is returned by AddJob when one of the jobs is nil.
	ErrNilJob = fmt.Errorf("%w: nil job", job.ErrInvalid)
	// ErrNoIDs is returned by the methods that take job ids when none are given.
	ErrNoIDs = fmt.Errorf("%w: no job ids given", job.ErrInvalid)
	// ErrInvalidPredicate is returned by FindJob for a predicate that is neither a map nor
	// a ReQL function.
	ErrInvalidPredicate = fmt.Errorf("%w predicate: want map[string]any or func(r.Term) r.Term", job.ErrInvalid)
)
