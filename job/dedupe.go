package job

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// The extra fields of SetUniqueFor and SetDebounce, in milliseconds.
const (
	fieldUniqueFor = docfmt.UniqueFor
	fieldDebounce  = docfmt.Debounce
)

// Errors of SetUniqueFor and SetDebounce, each wrapping ErrInvalid.
var (
	ErrInvalidUniqueFor = fmt.Errorf("%w unique window: want a positive duration, on a job with a unique key (SetUniqueKey)", ErrInvalid)
	ErrInvalidDebounce  = fmt.Errorf("%w debounce: want a positive duration, on a job with a unique key (SetUniqueKey)", ErrInvalid)
)

// SetUniqueFor widens the job's unique key (see SetUniqueKey) over time: a finished job of
// the key also stands in place of a new one until d after it finished, so that a job
// posted twice in a row runs once even when the first has already completed (a signup
// that sends its welcome email once). AddJob then returns the finished job, whose
// Duplicate reports true. After d, a new job of the key replaces the finished one, as
// without a window. The job needs a unique key when it is added (set it before or after);
// d is cut to whole milliseconds and must be at least one.
//
// The window is stored in the extra field "rjqUniqueFor"; the Node.js library ignores it.
func (j *Job) SetUniqueFor(d time.Duration) *Job {
	return j.setMillis(fieldUniqueFor, ErrInvalidUniqueFor, d)
}

// UniqueFor returns the window SetUniqueFor set, or 0.
func (j *Job) UniqueFor() time.Duration { return j.millisField(fieldUniqueFor) }

// SetDebounce makes adds of the job's unique key (see SetUniqueKey) a debounce: adding
// the job while a job of its key is waiting replaces that job (its data, options and
// log) and moves its start to d from now, so that a burst of adds runs the job once, d
// after the last add, with the last add's data. The first add of a burst starts d from
// now too (or at its SetDateEnable time, if later). A job of the key that is already
// active, failed (to be retried) or within its SetUniqueFor window is not replaced: AddJob
// returns it, and its Duplicate reports true. The job needs a unique key when it is added;
// d is cut to whole milliseconds and must be at least one.
//
// A replaced job raises an added event, on this queue and on every queue that follows
// the table's changes, as a new one would. The debounce is stored in the extra field
// "rjqDebounce"; the Node.js library ignores it.
func (j *Job) SetDebounce(d time.Duration) *Job {
	return j.setMillis(fieldDebounce, ErrInvalidDebounce, d)
}

// setMillis stores d, at least a millisecond, in the extra field name in whole
// milliseconds; else it keeps sentinel as the job's error.
func (j *Job) setMillis(name string, sentinel error, d time.Duration) *Job {
	if d < time.Millisecond {
		return j.fail(fmt.Errorf("%w (got %v)", sentinel, d))
	}
	j.setField(name, d.Milliseconds())
	return j
}

// Debounce returns the debounce SetDebounce set, or 0.
func (j *Job) Debounce() time.Duration { return j.millisField(fieldDebounce) }

// Duplicate reports whether AddJob returned j in place of the job it was given: a job of
// the same unique key (see SetUniqueKey) that was unfinished, within its SetUniqueFor
// window, or not replaceable by a debounce. The job given was not added.
func (j *Job) Duplicate() bool { return j.duplicate }

// MarkDuplicate makes Duplicate report true: queues call it on the jobs AddJob returns in
// place of those it was given.
func (j *Job) MarkDuplicate() { j.duplicate = true }

// millisField reads an extra field of whole milliseconds; anything else (a value written
// by hand, say) reads as 0.
func (j *Job) millisField(name string) time.Duration {
	n, ok := number(j.Fields[name])
	if !ok || n < 0 || n > float64(maxMillis) {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// maxMillis is the longest duration in milliseconds.
const maxMillis = int64(1<<63-1) / int64(time.Millisecond)

// checkDedupe reports a window or debounce on a job without a unique key, or one that is
// not a positive number of milliseconds (a field written by hand).
func (j *Job) checkDedupe() error {
	for _, f := range []struct {
		name     string
		sentinel error
	}{{fieldUniqueFor, ErrInvalidUniqueFor}, {fieldDebounce, ErrInvalidDebounce}} {
		name, sentinel := f.name, f.sentinel
		v, set := j.Fields[name]
		if !set {
			continue
		}
		if j.millisField(name) <= 0 {
			return fmt.Errorf("%w (the field %q holds %v)", sentinel, name, v)
		}
		if j.UniqueKey() == "" {
			return fmt.Errorf("%w (job %s has none)", sentinel, j.ID)
		}
	}
	return nil
}
