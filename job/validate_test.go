package job

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// A deadline must come after the job's own start: one at or before its dateEnable could
// never be met. Err reports it whichever setter came last, Validate (AddJob) when the
// fields were set by hand; a job already added (a retry moved its dateEnable) is not
// concerned.
func TestADeadlineNotAfterTheStartIsRefused(t *testing.T) {
	now := time.Now()
	start := toMillis(now.Add(time.Hour))
	for _, tc := range []struct {
		name string
		make func() *Job
		ok   bool
	}{
		{"start, then an earlier deadline", func() *Job {
			return New(nil, Options{}).SetDateEnable(start).SetDeadline(now.Add(time.Minute))
		}, false},
		{"deadline, then a later start", func() *Job {
			return New(nil, Options{}).SetDeadline(now.Add(time.Minute)).SetDateEnable(start)
		}, false},
		{"a deadline equal to the start", func() *Job {
			return New(nil, Options{}).SetDateEnable(start).SetDeadline(start)
		}, false},
		{"a start in Options after the deadline", func() *Job {
			return New(nil, Options{DateEnable: start}).SetDeadline(now.Add(time.Minute))
		}, false},
		{"a millisecond after the start", func() *Job {
			return New(nil, Options{}).SetDateEnable(start).SetDeadline(start.Add(time.Millisecond))
		}, true},
		{"no start given: the creation", func() *Job { return New(nil, Options{}).SetDeadline(now.Add(time.Minute)) }, true},
		{"a deadline after the start", func() *Job {
			return New(nil, Options{}).SetDeadline(start.Add(time.Minute)).SetDateEnable(start)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.make()
			if tc.ok {
				assert.NoError(t, j.Err())
				assert.NoError(t, j.Validate())
				return
			}
			for _, err := range []error{j.Err(), j.Validate()} {
				require.ErrorIs(t, err, ErrInvalidDeadline)
				assert.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), "could never start")
				assert.NotContains(t, err.Error(), "m=")
			}
		})
	}

	j := New(nil, Options{}).SetDeadline(now.Add(time.Minute))
	require.NoError(t, j.Err())
	j.DateEnable = start // by hand
	assert.ErrorIs(t, j.Validate(), ErrInvalidDeadline, "AddJob refuses it")
	j.Status = Failed // added, and retried after its deadline: the deadline cancels it
	assert.NoError(t, j.Validate())
}

// A past deadline's error shows the time in RFC 3339, without the monotonic clock.
func TestDeadlineErrorsShowTimesPlainly(t *testing.T) {
	past := time.Now().Add(-time.Minute)
	err := New(nil, Options{}).SetDeadline(past).Err()
	require.ErrorIs(t, err, ErrInvalidDeadline)
	assert.NotContains(t, err.Error(), "m=")
	assert.Contains(t, err.Error(), past.Format(time.RFC3339Nano))
}

// SetDependsOn refuses an id that is not a job id at once, as an invalid id.
func TestSetDependsOnRefusesWhatIsNotAnID(t *testing.T) {
	err := New(nil, Options{}).SetDependsOn(uuid.NewString(), "not-a-uuid").Err()
	require.ErrorIs(t, err, ErrInvalidID)
	assert.ErrorIs(t, err, ErrInvalidDependsOn)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), `"not-a-uuid" is not a job id`)
}

// Validate (and so AddJob and rjqtest.Run) refuses parents written into Fields by hand
// that SetDependsOn would have refused.
func TestValidateChecksTheParentsField(t *testing.T) {
	p := uuid.NewString()
	j := New(nil, Options{})
	many := make([]any, MaxDependsOn+1)
	for i := range many {
		many[i] = uuid.NewString()
	}
	for _, tc := range []struct {
		name  string
		value any
		says  string
		isID  bool
	}{
		{"not a list", p, "not a list of job ids", false},
		{"a list of strings", []string{p}, "not a list of job ids", false},
		{"empty", []any{}, "no id", false},
		{"not a string", []any{p, 7}, "not a job id", true},
		{"not an id", []any{p, "p2"}, `"p2" is not a job id`, true},
		{"itself", []any{j.ID}, "cannot depend on itself", false},
		{"twice", []any{p, p}, "twice", false},
		{"too many", many, "MaxDependsOn", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *j
			c.Fields = map[string]any{docfmt.DependsOn: tc.value}
			err := c.Validate()
			require.ErrorIs(t, err, ErrInvalidDependsOn)
			assert.Contains(t, err.Error(), tc.says)
			if tc.isID {
				assert.ErrorIs(t, err, ErrInvalidID)
			}
		})
	}
	ok := New(nil, Options{}).SetDependsOn(p)
	assert.NoError(t, ok.Validate())
}

// The keys and ids an error echoes are shortened: a 1,000-byte key appears once, cut, with
// its length.
func TestErrorsShortenLongKeys(t *testing.T) {
	long := strings.Repeat("k", 1000)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"group", New(nil, Options{}).SetGroup(long).Err()},
		{"sequence", New(nil, Options{}).SetSequence(long).Err()},
		{"unique key", New(nil, Options{}).SetUniqueKey(long + "\xff").Err()},
		{"parent", New(nil, Options{}).SetDependsOn(long).Err()},
		{"id", func() error { j := New(nil, Options{}); j.ID = long; return j.Validate() }()},
		{"name", New(nil, Options{}).SetName(long + "\xff").Validate()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			msg := tc.err.Error()
			assert.Less(t, len(msg), 400, msg)
			assert.Contains(t, msg, "bytes)")
		})
	}
}
