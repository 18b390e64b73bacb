package job

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// ErrInvalidDeadline wraps the error of SetDeadline given a time that is zero, already
// past, outside the years the driver can store, or not after the job's DateEnable; it
// wraps ErrInvalid.
var ErrInvalidDeadline = fmt.Errorf("%w deadline: want a time in the future, after the job's dateEnable, before 2262", ErrInvalid)

// SetDeadline gives the job a start deadline: a job not started by t never starts. When
// t passes while the job waits (or waits for a retry), it is cancelled with the reason
// "deadline passed" (MessageDeadlinePassed): a cancelled event with that Reason, on
// every queue of the table, and that log entry. A Queue Master cancels it within about a
// second of t (every queue is one by default; a Master with NoChangeFeed may take up to a
// minute to notice the table's first job with a deadline, when another process added
// it); a worker that reads it after t cancels it rather than run it, so it never starts
// late even with no Master. A run that started before t is not affected.
//
// t must come after the job's DateEnable (its creation, unless SetDateEnable or
// Options.DateEnable set a later start), at least by a millisecond: a deadline at or
// before the earliest time the job may start could never be met, and SetDeadline and
// SetDateEnable refuse it whichever is called last (AddJob too, for fields set by hand).
// AddJob also refuses a deadline that a debounce (SetDebounce) moves the start past.
//
// The deadline is stored, to the millisecond, in the extra field "rjqDeadline". A
// Node.js worker knows nothing of it: it runs such a job whenever it claims it.
func (j *Job) SetDeadline(t time.Time) *Job {
	if t.IsZero() || !t.After(time.Now()) || checkDate(t) != nil {
		return j.fail(fmt.Errorf("%w (got %s)", ErrInvalidDeadline, errtext.Time(t)))
	}
	if err := j.startsBefore(j.DateEnable, toMillis(t)); err != nil {
		return j.fail(err)
	}
	j.setField(docfmt.Deadline, toMillis(t))
	return j
}

// Deadline returns the job's start deadline (SetDeadline), or the zero time for none.
func (j *Job) Deadline() time.Time {
	t, _ := j.Fields[docfmt.Deadline].(time.Time)
	return t
}

// checkDeadline reports a deadline field that is not a time (written by hand), and, on a
// job not added yet, one not after its dateEnable.
func (j *Job) checkDeadline() error {
	v, set := j.Fields[docfmt.Deadline]
	if !set {
		return nil
	}
	d, ok := v.(time.Time)
	if !ok {
		return fmt.Errorf("%w (the field %q holds %v)", ErrInvalidDeadline, docfmt.Deadline, v)
	}
	return j.startsBefore(j.DateEnable, d)
}

// startsBefore reports a deadline that a job not added yet, enabled at start, could never
// meet: one at or before start (a deadline reached has passed). A zero start is left to
// the checks of dateEnable; a job already added is not concerned (its dateEnable is then
// a retry's time or a run's lease, which its deadline may precede).
func (j *Job) startsBefore(start, deadline time.Time) error {
	if start.IsZero() || deadline.After(start) || (j.Status != Created && j.Status != "") {
		return nil
	}
	return fmt.Errorf("%w: the deadline %s is not after the job's dateEnable %s, the earliest it may start: it could never start (give a later deadline or an earlier dateEnable)",
		ErrInvalidDeadline, errtext.Time(deadline), errtext.Time(start))
}
