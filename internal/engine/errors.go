package engine

import (
	"errors"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The queue's errors; package queue exports each under the same name, with its doc.
var (
	ErrStopped          = errors.New("queue: stopped: create a new Queue with queue.New")
	ErrConnect          = errors.New("queue: cannot connect to RethinkDB")
	ErrInvalidOption    = fmt.Errorf("%w option", job.ErrInvalid)
	ErrNoJobs           = fmt.Errorf("%w: no jobs given", job.ErrInvalid)
	ErrNilJob           = fmt.Errorf("%w: nil job", job.ErrInvalid)
	ErrNoIDs            = fmt.Errorf("%w: no job ids given", job.ErrInvalid)
	ErrInvalidPredicate = fmt.Errorf("%w predicate: want map[string]any or func(r.Term) r.Term", job.ErrInvalid)
	ErrProcessTwice     = errors.New("queue: Process called twice: a queue has one handler")
	ErrInvalidLimit     = fmt.Errorf("%w limit", job.ErrInvalid)
	ErrInvalidSchedule  = fmt.Errorf("%w schedule", job.ErrInvalid)
	ErrInvalidState     = errors.New("queue: the State Document has an unknown state")
)
