package job

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultOptions(t *testing.T) {
	o := DefaultOptions()
	assert.Equal(t, "", o.Name)
	assert.Equal(t, Normal, o.Priority)
	assert.Equal(t, 5*time.Minute, o.Timeout)
	assert.Equal(t, 3, o.RetryMax)
	assert.Equal(t, 10*time.Minute, o.RetryDelay)
	assert.Equal(t, 0, o.Repeat)
	assert.Equal(t, 5*time.Minute, o.RepeatDelay)
	assert.True(t, o.DateEnable.IsZero())
	assert.NoError(t, o.Validate())

	// The constants agree with the original's defaults (enums.js, in milliseconds).
	assert.Equal(t, int64(300000), DefaultTimeout.Milliseconds())
	assert.Equal(t, int64(600000), DefaultRetryDelay.Milliseconds())
	assert.Equal(t, int64(300000), DefaultRepeatDelay.Milliseconds())
	assert.Equal(t, -1, RepeatForever)
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		want   []error // nil: valid
	}{
		{"defaults", func(o *Options) {}, nil},
		{"zero durations and counts", func(o *Options) {
			o.Timeout, o.RetryDelay, o.RepeatDelay, o.RetryMax, o.Repeat = 0, 0, 0, 0, 0
		}, nil},
		{"repeat forever", func(o *Options) { o.Repeat = RepeatForever }, nil},
		{"repeat count", func(o *Options) { o.Repeat = 5 }, nil},
		{"name set", func(o *Options) { o.Name = "x" }, nil},
		{"date enable set", func(o *Options) { o.DateEnable = time.Now().Add(time.Hour) }, nil},
		{"every priority", func(o *Options) { o.Priority = Lowest }, nil},

		{"priority zero means Normal", func(o *Options) { o.Priority = 0 }, nil},
		{"timeout zero means the default", func(o *Options) { o.Timeout = 0 }, nil},
		{"priority 7", func(o *Options) { o.Priority = 7 }, []error{ErrInvalidPriority}},
		{"timeout", func(o *Options) { o.Timeout = -time.Millisecond }, []error{ErrInvalidTimeout}},
		{"retry delay", func(o *Options) { o.RetryDelay = -1 }, []error{ErrInvalidRetryDelay}},
		{"repeat delay", func(o *Options) { o.RepeatDelay = -time.Second }, []error{ErrInvalidRepeatDelay}},
		{"retry max", func(o *Options) { o.RetryMax = -2 }, []error{ErrInvalidRetryMax}},
		{"no retries", func(o *Options) { o.RetryMax = NoRetries }, nil},
		{"repeat -2", func(o *Options) { o.Repeat = -2 }, []error{ErrInvalidRepeat}},
		{"all invalid", func(o *Options) {
			o.Priority = 99
			o.Timeout = -1
			o.RetryDelay = -1
			o.RepeatDelay = -1
			o.RetryMax = -3
			o.Repeat = -7
		}, []error{
			ErrInvalidPriority, ErrInvalidTimeout, ErrInvalidRetryDelay,
			ErrInvalidRepeatDelay, ErrInvalidRetryMax, ErrInvalidRepeat,
		}},
		{"two invalid", func(o *Options) { o.Timeout = -1; o.Repeat = -2 }, []error{ErrInvalidTimeout, ErrInvalidRepeat}},
	}
	all := []error{
		ErrInvalidPriority, ErrInvalidTimeout, ErrInvalidRetryDelay, ErrInvalidRepeatDelay,
		ErrInvalidRetryMax, ErrInvalidRepeat, ErrInvalidName, ErrInvalidDateEnable,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.modify(&o)
			err := o.Validate()
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			for _, w := range tt.want {
				assert.ErrorIs(t, err, w)
			}
			// and no sentinel that does not apply
			for _, other := range all {
				if !containsErr(tt.want, other) {
					assert.False(t, errors.Is(err, other), "unexpected %v in %v", other, err)
				}
			}
		})
	}
}

func containsErr(list []error, e error) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// setterCase describes one setter call on a fresh job.
type setterCase struct {
	name string
	call func(*Job) *Job
	// check asserts the value was applied (valid) or that the field kept its old value
	// (invalid: compare against the fresh job).
	check func(t *testing.T, got, fresh *Job)
	err   error // nil: valid
}

func setterCases() []setterCase {
	unchanged := func(t *testing.T, got, fresh *Job) {
		t.Helper()
		assert.Equal(t, fresh.Name, got.Name)
		assert.Equal(t, fresh.Priority, got.Priority)
		assert.Equal(t, fresh.Timeout, got.Timeout)
		assert.Equal(t, fresh.RetryMax, got.RetryMax)
		assert.Equal(t, fresh.RetryDelay, got.RetryDelay)
		assert.Equal(t, fresh.Repeat, got.Repeat)
		assert.Equal(t, fresh.RepeatDelay, got.RepeatDelay)
		assert.True(t, fresh.DateEnable.Equal(got.DateEnable))
	}
	enable := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	return []setterCase{
		{"SetName", func(j *Job) *Job { return j.SetName("mail") },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, "mail", got.Name) }, nil},
		{"SetName empty", func(j *Job) *Job { return j.SetName("") }, unchanged, ErrInvalidName},
		{"SetPriority", func(j *Job) *Job { return j.SetPriority(Highest) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, Highest, got.Priority) }, nil},
		{"SetPriority 7", func(j *Job) *Job { return j.SetPriority(7) }, unchanged, ErrInvalidPriority},
		{"SetPriority 0", func(j *Job) *Job { return j.SetPriority(0) }, unchanged, ErrInvalidPriority},
		{"SetTimeout", func(j *Job) *Job { return j.SetTimeout(time.Second) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, time.Second, got.Timeout) }, nil},
		{"SetTimeout 0", func(j *Job) *Job { return j.SetTimeout(0) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, time.Duration(0), got.Timeout) }, nil},
		{"SetTimeout negative", func(j *Job) *Job { return j.SetTimeout(-time.Second) }, unchanged, ErrInvalidTimeout},
		{"SetRetryMax", func(j *Job) *Job { return j.SetRetryMax(7) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, 7, got.RetryMax) }, nil},
		{"SetRetryMax 0", func(j *Job) *Job { return j.SetRetryMax(0) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, 0, got.RetryMax) }, nil},
		{"SetRetryMax negative", func(j *Job) *Job { return j.SetRetryMax(-1) }, unchanged, ErrInvalidRetryMax},
		{"SetRetryDelay", func(j *Job) *Job { return j.SetRetryDelay(time.Minute) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, time.Minute, got.RetryDelay) }, nil},
		{"SetRetryDelay negative", func(j *Job) *Job { return j.SetRetryDelay(-1) }, unchanged, ErrInvalidRetryDelay},
		{"SetRepeat", func(j *Job) *Job { return j.SetRepeat(4) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, 4, got.Repeat) }, nil},
		{"SetRepeat forever", func(j *Job) *Job { return j.SetRepeat(RepeatForever) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, RepeatForever, got.Repeat) }, nil},
		{"SetRepeat -2", func(j *Job) *Job { return j.SetRepeat(-2) }, unchanged, ErrInvalidRepeat},
		{"SetRepeatDelay", func(j *Job) *Job { return j.SetRepeatDelay(2 * time.Second) },
			func(t *testing.T, got, _ *Job) { assert.Equal(t, 2*time.Second, got.RepeatDelay) }, nil},
		{"SetRepeatDelay negative", func(j *Job) *Job { return j.SetRepeatDelay(-2 * time.Second) }, unchanged, ErrInvalidRepeatDelay},
		{"SetDateEnable", func(j *Job) *Job { return j.SetDateEnable(enable) },
			func(t *testing.T, got, _ *Job) { assert.True(t, enable.Equal(got.DateEnable)) }, nil},
		{"SetDateEnable zero", func(j *Job) *Job { return j.SetDateEnable(time.Time{}) }, unchanged, ErrInvalidDateEnable},
	}
}

func TestSetters(t *testing.T) {
	for _, tt := range setterCases() {
		t.Run(tt.name, func(t *testing.T) {
			j := New(nil, DefaultOptions())
			fresh := *j
			got := tt.call(j)
			assert.Same(t, j, got, "setters return their receiver")
			tt.check(t, j, &fresh)
			if tt.err == nil {
				assert.NoError(t, j.Err())
				assert.NoError(t, j.Validate())
				return
			}
			require.Error(t, j.Err())
			assert.ErrorIs(t, j.Err(), tt.err)
			assert.ErrorIs(t, j.Err(), ErrInvalid)
			// Validate reports the setter's error too, so Queue.AddJob refuses the job.
			assert.ErrorIs(t, j.Validate(), tt.err)
		})
	}
}

func TestSettersChain(t *testing.T) {
	enable := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	j := New("payload", DefaultOptions()).
		SetName("chain").
		SetPriority(Low).
		SetTimeout(time.Second).
		SetRetryMax(1).
		SetRetryDelay(2 * time.Second).
		SetRepeat(3).
		SetRepeatDelay(4 * time.Second).
		SetDateEnable(enable)
	require.NoError(t, j.Err())
	assert.Equal(t, "chain", j.Name)
	assert.Equal(t, Low, j.Priority)
	assert.Equal(t, time.Second, j.Timeout)
	assert.Equal(t, 1, j.RetryMax)
	assert.Equal(t, 2*time.Second, j.RetryDelay)
	assert.Equal(t, 3, j.Repeat)
	assert.Equal(t, 4*time.Second, j.RepeatDelay)
	assert.True(t, enable.Equal(j.DateEnable))
	assert.Equal(t, "payload", j.Data)
}

func TestSettersSeveralInvalidAllReported(t *testing.T) {
	j := New(nil, DefaultOptions()).
		SetName("").
		SetPriority(Highest). // valid: applied in between
		SetTimeout(-1).
		SetRetryMax(-1).
		SetRetryDelay(-1).
		SetRepeat(-5).
		SetRepeatDelay(-1).
		SetDateEnable(time.Time{})
	err := j.Err()
	require.Error(t, err)
	for _, want := range []error{
		ErrInvalidName, ErrInvalidTimeout, ErrInvalidRetryMax, ErrInvalidRetryDelay,
		ErrInvalidRepeat, ErrInvalidRepeatDelay, ErrInvalidDateEnable,
	} {
		assert.ErrorIs(t, err, want)
	}
	assert.False(t, errors.Is(err, ErrInvalidPriority))
	assert.Equal(t, Highest, j.Priority)
	// invalid values were not applied
	assert.Equal(t, j.ID, j.Name)
	assert.Equal(t, DefaultTimeout, j.Timeout)
	assert.Equal(t, DefaultRetryMax, j.RetryMax)
	assert.Equal(t, DefaultRetryDelay, j.RetryDelay)
	assert.Equal(t, 0, j.Repeat)
	assert.Equal(t, DefaultRepeatDelay, j.RepeatDelay)
	assert.False(t, j.DateEnable.IsZero())

	// A later valid call does not clear earlier errors.
	j.SetTimeout(time.Second)
	assert.ErrorIs(t, j.Err(), ErrInvalidTimeout)
}

func TestSetDateEnableTruncatesAndUTC(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	tests := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"ns in other zone",
			time.Date(2030, 6, 7, 13, 40, 5, 123456789, zone),
			time.Date(2030, 6, 7, 8, 10, 5, 123000000, time.UTC)},
		{"just below a ms", time.Date(2030, 1, 1, 0, 0, 0, 999999, time.UTC),
			time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"local zone", time.Unix(1900000000, 987654321).Local(),
			time.Date(2030, 3, 17, 17, 46, 40, 987000000, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New(nil, DefaultOptions()).SetDateEnable(tt.in)
			require.NoError(t, j.Err())
			assert.True(t, tt.want.Equal(j.DateEnable), "got %v want %v", j.DateEnable, tt.want)
			assert.Equal(t, time.UTC, j.DateEnable.Location())
			assert.Equal(t, 0, j.DateEnable.Nanosecond()%int(time.Millisecond))
		})
	}
	// a time taken from time.Now (with a monotonic reading) is stored without it
	j := New(nil, DefaultOptions()).SetDateEnable(time.Now())
	assert.Equal(t, j.DateEnable.Round(0), j.DateEnable)
}
