package job

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// Job is one unit of work and the Go form of one document in the queue's table. Read jobs
// with Queue.GetJob or FindJob, make new ones with Queue.CreateJob (or New) and the
// setters, and add them with Queue.AddJob.
//
// A Job is not safe for concurrent use: the methods that save it also update its fields.
type Job struct {
	ID           string
	Name         string
	Priority     Priority
	Timeout      time.Duration
	RetryDelay   time.Duration
	RepeatDelay  time.Duration
	RetryMax     int
	RetryCount   int
	ProcessCount int
	// Repeat is 0 for a job that does not repeat, n for n repeats, RepeatForever for ever.
	Repeat       int
	Progress     float64
	Status       Status
	Log          []LogEntry
	DateCreated  time.Time
	DateEnable   time.Time
	DateStarted  time.Time // zero until the job is first processed
	DateFinished time.Time // zero until the job first finishes or fails
	// QueueID is the id of the queue that last changed the job.
	QueueID string
	// Data is the job's payload, the document's "data" field, stored by encoding/json's
	// names (see "Payloads" in the package documentation). Values read from the database
	// are maps, slices, strings, float64s, bools, time.Times and []bytes; use DataAs to
	// decode them into a type of your own.
	Data any
	// Fields holds every other top-level field of the document. They are written back
	// untouched by every save; deleting a key and calling Update removes the field.
	// Node.js jobs created from an object keep that object's keys here.
	Fields map[string]any

	// store saves the job and decodes its values; nil for a job no queue handed out.
	store Store
	err   error
	// duplicate is set on a job AddJob returned in place of the one it was given.
	duplicate bool
}

// New returns a job with status Created, a new id, the given payload and options, not yet
// in any queue: Queue.AddJob adds it. Queue.CreateJob is the usual way to make one; New
// serves producers that build jobs away from a queue. Zero options take their defaults,
// the same as CreateJob's (see Options), so New(data, Options{}) is CreateJob(data) on a
// queue with the default JobOptions; an invalid option is reported by Err.
func New(data any, opts Options) *Job {
	opts = opts.WithDefaults()
	created := creationTime()
	id := uuid.NewString()
	j := &Job{
		ID:          id,
		Name:        opts.Name,
		Priority:    opts.Priority,
		Timeout:     opts.Timeout,
		RetryDelay:  opts.RetryDelay,
		RepeatDelay: opts.RepeatDelay,
		RetryMax:    max(opts.RetryMax, 0), // NoRetries: none
		Repeat:      opts.Repeat,
		Status:      Created,
		Log:         []LogEntry{},
		DateCreated: created,
		DateEnable:  toMillis(time.Now()),
		Data:        data,
		err:         opts.Validate(),
	}
	if j.Name == "" {
		j.Name = id
	}
	if !opts.DateEnable.IsZero() {
		j.DateEnable = toMillis(opts.DateEnable)
	}
	return j
}

// Err returns the errors of every setter call that was given an invalid value (those
// values were not applied), joined, or nil.
func (j *Job) Err() error { return j.err }

func (j *Job) fail(err error) *Job {
	j.err = errors.Join(j.err, err)
	return j
}

// SetName sets the job's name; an empty name is invalid.
func (j *Job) SetName(name string) *Job {
	if name == "" {
		return j.fail(ErrInvalidName)
	}
	j.Name = name
	return j
}

// SetPriority sets the job's priority; it must be one of the six Priority constants.
func (j *Job) SetPriority(p Priority) *Job {
	if !p.Valid() {
		return j.fail(fmt.Errorf("%w (got %d)", ErrInvalidPriority, int(p)))
	}
	j.Priority = p
	return j
}

// SetTimeout sets how long one run may take; it must not be negative.
func (j *Job) SetTimeout(d time.Duration) *Job {
	if err := checkDuration(ErrInvalidTimeout, d); err != nil {
		return j.fail(err)
	}
	j.Timeout = d
	return j
}

// SetRetryMax sets how many times a failed job is retried; it must not be negative.
func (j *Job) SetRetryMax(n int) *Job {
	if err := checkCount(ErrInvalidRetryMax, n); err != nil {
		return j.fail(err)
	}
	j.RetryMax = n
	return j
}

// SetRetryDelay sets the delay unit between retries; it must not be negative.
func (j *Job) SetRetryDelay(d time.Duration) *Job {
	if err := checkDuration(ErrInvalidRetryDelay, d); err != nil {
		return j.fail(err)
	}
	j.RetryDelay = d
	return j
}

// SetRepeat sets how many times the job runs again after its first run: 0 for never, n for
// n times, RepeatForever for ever.
func (j *Job) SetRepeat(n int) *Job {
	if err := checkRepeat(n); err != nil {
		return j.fail(err)
	}
	j.Repeat = n
	return j
}

// SetRepeatDelay sets the wait between repeats; it must not be negative.
func (j *Job) SetRepeatDelay(d time.Duration) *Job {
	if err := checkDuration(ErrInvalidRepeatDelay, d); err != nil {
		return j.fail(err)
	}
	j.RepeatDelay = d
	return j
}

// SetDateEnable sets the earliest time the job may run; the zero time is invalid, and so
// is, on a job not added yet, a time at or after its deadline (SetDeadline).
func (j *Job) SetDateEnable(t time.Time) *Job {
	if t.IsZero() {
		return j.fail(ErrInvalidDateEnable)
	}
	if d := j.Deadline(); !d.IsZero() {
		if err := j.startsBefore(toMillis(t), d); err != nil {
			return j.fail(err)
		}
	}
	j.DateEnable = toMillis(t)
	return j
}

// DataAs decodes the job's payload into v, which must be a non-nil pointer, by the names it
// was stored by: a struct's json names, or its rethinkdb tags where it has them (see
// "Payloads" in the package documentation). Documents stored by Go field name (before
// v0.3) still decode: a key that matches no json name is matched case-insensitively, then
// by the field's Go name.
func (j *Job) DataAs(v any) error {
	if err := j.decode(j.Data, v); err != nil {
		return fmt.Errorf("job %s: data: %w", j.ID, err)
	}
	return nil
}

// The same pattern the Node.js library checks ids with, so both accept the same ids.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

// ValidID reports whether id is a job id: a version 1 to 5 UUID in its 36-character form.
func ValidID(id string) bool { return uuidPattern.MatchString(id) }

// Validate reports whether j can be written to a queue: no setter error, and every field
// in range. Each error wraps ErrInvalid.
func (j *Job) Validate() error {
	if j == nil {
		return fmt.Errorf("%w: nil job", ErrInvalid)
	}
	errs := []error{j.err, j.options().Validate(), j.checkDedupe(), j.checkDeadline(), j.checkDependsOn()}
	if j.Priority == 0 {
		// Zero means Normal only in Options; a job stores its priority as it is.
		errs = append(errs, fmt.Errorf("%w (got 0)", ErrInvalidPriority))
	}
	if j.RetryMax == NoRetries {
		// NoRetries is an Options value; a job stores its retryMax as it is.
		errs = append(errs, fmt.Errorf("%w (got %d)", ErrInvalidRetryMax, j.RetryMax))
	}
	if !ValidID(j.ID) {
		errs = append(errs, fmt.Errorf("%w (got %s)", ErrInvalidID, errtext.Key(j.ID)))
	}
	errs = append(errs,
		checkField(j.RetryCount >= 0, "retryCount must not be negative (got %d)", j.RetryCount),
		checkField(j.ProcessCount >= 0, "processCount must not be negative (got %d)", j.ProcessCount),
		checkField(j.Progress >= 0 && j.Progress <= 100 && !math.IsNaN(j.Progress), "progress must be within 0..100 (got %v)", j.Progress),
		checkField(j.Status.Valid(), "status %q is not a job status", j.Status),
		checkField(!j.DateCreated.IsZero(), "dateCreated must be set%s", ""),
	)
	if j.DateEnable.IsZero() {
		errs = append(errs, ErrInvalidDateEnable)
	}
	for k := range j.Fields {
		errs = append(errs, checkField(!reservedField(k), "%q is a job field: set it through the Job struct, not Fields", k))
	}
	if err := CheckValue(j.Data); err != nil {
		errs = append(errs, fmt.Errorf("payload: %w", err))
	}
	if err := CheckValue(j.Fields); err != nil {
		errs = append(errs, fmt.Errorf("fields: %w", err))
	}
	if !utf8.ValidString(j.Name) {
		errs = append(errs, fmt.Errorf("%w (got %s: not valid UTF-8)", ErrInvalidName, errtext.Key(j.Name)))
	}
	return errors.Join(errs...)
}

// options returns the job's settings that Options also holds, to validate them alike.
func (j *Job) options() Options {
	return Options{
		Name:        j.Name,
		Priority:    j.Priority,
		Timeout:     j.Timeout,
		RetryDelay:  j.RetryDelay,
		RepeatDelay: j.RepeatDelay,
		RetryMax:    j.RetryMax,
		Repeat:      j.Repeat,
		DateEnable:  j.DateEnable,
	}
}

func checkField(ok bool, format string, arg any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%w: "+format, ErrInvalidField, arg)
}
