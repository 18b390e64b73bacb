package job

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// ErrInvalidDeadline wraps the error of SetDeadline given a time that is zero, already
// past, or outside the years the driver can store; it wraps ErrInvalid.
var ErrInvalidDeadline = fmt.Errorf("%w deadline: want a time in the future, before 2262", ErrInvalid)

// SetDeadline gives the job a start deadline: a job not started by t never starts. When
// t passes while the job waits (or waits for a retry), it is cancelled with the reason
// "deadline passed" (MessageDeadlinePassed): a cancelled event with that Reason, on
// every queue of the table, and that log entry. A Queue Master cancels it within about a
// second of t (every queue is one by default; a Master with NoChangeFeed may take up to a
// minute to notice the table's first job with a deadline, when another process added
// it); a worker that reads it after t cancels it rather than run it, so it never starts
// late even with no Master. A run that started before t is not affected.
//
// The deadline is stored, to the millisecond, in the extra field "rjqDeadline". A
// Node.js worker knows nothing of it: it runs such a job whenever it claims it.
func (j *Job) SetDeadline(t time.Time) *Job {
	if t.IsZero() || !t.After(time.Now()) || checkDate(t) != nil {
		return j.fail(fmt.Errorf("%w (got %v)", ErrInvalidDeadline, t))
	}
	j.setField(docfmt.Deadline, toMillis(t))
	return j
}

// Deadline returns the job's start deadline (SetDeadline), or the zero time for none.
func (j *Job) Deadline() time.Time {
	t, _ := j.Fields[docfmt.Deadline].(time.Time)
	return t
}

// checkDeadline reports a deadline field that is not a time (written by hand).
func (j *Job) checkDeadline() error {
	v, set := j.Fields[docfmt.Deadline]
	if _, ok := v.(time.Time); set && !ok {
		return fmt.Errorf("%w (the field %q holds %v)", ErrInvalidDeadline, docfmt.Deadline, v)
	}
	return nil
}
