package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// RepeatForever as Options.Repeat (or SetRepeat) repeats a job until it is cancelled or
// removed. It is stored as `true`, as the Node.js library stores it.
const RepeatForever = -1

// NoRetries as Options.RetryMax makes jobs that are never retried: their first failure
// terminates them. (RetryMax 0 in Options means the default, 3.)
const NoRetries = -1

// Options are the settings a new job starts with. The zero value of every field means the
// original library's default, as DefaultOptions gives them: priority Normal, timeout 5
// minutes, 3 retries 10 minutes apart, no repeat, repeat delay 5 minutes, enabled at
// creation. So job.New(data, job.Options{}) and Queue.CreateJob(data) make the same job
// (with a queue's default JobOptions). Say "none" with NoRetries, or set exact values on
// the job with its setters (SetRetryMax(0), SetRetryDelay(0)), which take every value as
// given. Durations are stored in whole milliseconds (anything finer is dropped).
type Options struct {
	// Name identifies related jobs (not necessarily uniquely) and is indexed for
	// FindJobByName. Empty means "the job's id".
	Name string
	// Priority orders waiting jobs; zero means Normal.
	Priority Priority
	// Timeout is how long one run of the job may take before it is failed; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// RetryDelay is multiplied by the retry count to delay each retry; zero means
	// DefaultRetryDelay.
	RetryDelay time.Duration
	// RepeatDelay is the wait between the repeats of a repeating job; zero means
	// DefaultRepeatDelay.
	RepeatDelay time.Duration
	// RetryMax is how many times a failed job is retried; zero means DefaultRetryMax,
	// NoRetries none.
	RetryMax int
	// Repeat is how many times the job runs again after its first run: 0 for never, n for n
	// more runs, RepeatForever for ever.
	Repeat int
	// DateEnable is the earliest time the job may run; the zero time means "when it is
	// created".
	DateEnable time.Time
}

// The original library's defaults.
const (
	DefaultTimeout     = 5 * time.Minute
	DefaultRetryMax    = 3
	DefaultRetryDelay  = 10 * time.Minute
	DefaultRepeatDelay = 5 * time.Minute
)

// DefaultOptions returns the original library's job defaults: priority Normal, timeout
// 5 minutes, 3 retries 10 minutes apart (times the retry count), no repeat, repeat delay
// 5 minutes, enabled at creation.
func DefaultOptions() Options {
	return Options{
		Priority:    Normal,
		Timeout:     DefaultTimeout,
		RetryMax:    DefaultRetryMax,
		RetryDelay:  DefaultRetryDelay,
		RepeatDelay: DefaultRepeatDelay,
	}
}

// WithDefaults returns o with every zero field replaced by its default (see Options);
// NoRetries stays, so that applying it twice changes nothing. New gives a job these
// values, with NoRetries as a RetryMax of 0.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.Priority == 0 {
		o.Priority = d.Priority
	}
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = d.RetryDelay
	}
	if o.RepeatDelay == 0 {
		o.RepeatDelay = d.RepeatDelay
	}
	if o.RetryMax == 0 {
		o.RetryMax = d.RetryMax
	}
	return o
}

// Validate reports every invalid option, each error wrapping ErrInvalid and the option's
// own ErrInvalidX. The zero DateEnable and the empty Name are valid (they mean "now" and
// "the id").
func (o Options) Validate() error {
	var errs []error
	if o.Priority != 0 && !o.Priority.Valid() {
		errs = append(errs, fmt.Errorf("%w (got %d)", ErrInvalidPriority, int(o.Priority)))
	}
	errs = append(errs,
		checkDuration(ErrInvalidTimeout, o.Timeout),
		checkDuration(ErrInvalidRetryDelay, o.RetryDelay),
		checkDuration(ErrInvalidRepeatDelay, o.RepeatDelay),
		checkRetryMax(o.RetryMax),
		checkRepeat(o.Repeat),
		checkDate(o.DateEnable))
	return errors.Join(errs...)
}

func checkDuration(sentinel error, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w (got %v)", sentinel, d)
	}
	return nil
}

func checkCount(sentinel error, n int) error {
	if n < 0 || n > maxSafeInt {
		return fmt.Errorf("%w (got %d)", sentinel, n)
	}
	return nil
}

// checkRetryMax checks an Options.RetryMax: a count, or NoRetries.
func checkRetryMax(n int) error {
	if n == NoRetries {
		return nil
	}
	return checkCount(ErrInvalidRetryMax, n)
}

func checkRepeat(n int) error {
	if n < RepeatForever || n > maxSafeInt {
		return fmt.Errorf("%w (got %d)", ErrInvalidRepeat, n)
	}
	return nil
}

// checkDate refuses a dateEnable the driver cannot encode (zero means "now" and passes).
func checkDate(t time.Time) error {
	if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
		return fmt.Errorf("%w (got %s)", ErrInvalidDateEnable, errtext.Time(t))
	}
	return nil
}
