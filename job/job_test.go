package job

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func assertMillisUTC(t *testing.T, tm time.Time) {
	t.Helper()
	assert.False(t, tm.IsZero())
	assert.Equal(t, time.UTC, tm.Location(), "time %v not UTC", tm)
	assert.Equal(t, 0, tm.Nanosecond()%int(time.Millisecond), "time %v not truncated to the ms", tm)
	assert.Equal(t, tm, tm.Round(0), "time %v carries a monotonic reading", tm)
}

func TestNewDefaults(t *testing.T) {
	before := time.Now().Add(-time.Millisecond)
	j := New("data", DefaultOptions())
	after := time.Now().Add(time.Second)

	require.NoError(t, j.Err())
	require.NoError(t, j.Validate())
	assert.Equal(t, Created, j.Status)

	id, err := uuid.Parse(j.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(4), id.Version())
	assert.Equal(t, uuid.RFC4122, id.Variant())
	assert.Equal(t, id.String(), j.ID, "canonical lower-case form")
	assert.True(t, ValidID(j.ID))

	assert.Equal(t, j.ID, j.Name, "name defaults to the id")
	assert.Equal(t, Normal, j.Priority)
	assert.Equal(t, DefaultTimeout, j.Timeout)
	assert.Equal(t, DefaultRetryMax, j.RetryMax)
	assert.Equal(t, DefaultRetryDelay, j.RetryDelay)
	assert.Equal(t, DefaultRepeatDelay, j.RepeatDelay)
	assert.Equal(t, 0, j.Repeat)
	assert.Equal(t, 0, j.RetryCount)
	assert.Equal(t, 0, j.ProcessCount)
	assert.Equal(t, 0.0, j.Progress)
	assert.NotNil(t, j.Log)
	assert.Empty(t, j.Log)
	assert.Equal(t, "data", j.Data)
	assert.Empty(t, j.QueueID)
	assert.Nil(t, j.Fields)

	assertMillisUTC(t, j.DateCreated)
	assertMillisUTC(t, j.DateEnable)
	assert.False(t, j.DateEnable.Before(before.Truncate(time.Millisecond)))
	assert.False(t, j.DateEnable.After(after), "dateEnable is the real time, never spread ahead")
	assert.True(t, j.DateStarted.IsZero())
	assert.True(t, j.DateFinished.IsZero())
	assert.True(t, j.DateCreated.After(before.Truncate(time.Millisecond)) || j.DateCreated.Equal(before.Truncate(time.Millisecond)))
	assert.True(t, j.DateCreated.Before(after))
}

func TestNewDistinctIDs(t *testing.T) {
	seen := make(map[string]bool)
	for range 200 {
		j := New(nil, DefaultOptions())
		require.False(t, seen[j.ID], "duplicate id %s", j.ID)
		seen[j.ID] = true
	}
}

func TestNewOptions(t *testing.T) {
	zone := time.FixedZone("EST", -5*3600)
	enable := time.Date(2031, 12, 24, 18, 30, 0, 987654321, zone)
	opts := Options{
		Name:        "mailer",
		Priority:    High,
		Timeout:     time.Second,
		RetryDelay:  2 * time.Second,
		RepeatDelay: 3 * time.Second,
		RetryMax:    4,
		Repeat:      RepeatForever,
		DateEnable:  enable,
	}
	j := New(map[string]any{"to": "x"}, opts)
	require.NoError(t, j.Err())
	assert.Equal(t, "mailer", j.Name)
	assert.Equal(t, High, j.Priority)
	assert.Equal(t, time.Second, j.Timeout)
	assert.Equal(t, 2*time.Second, j.RetryDelay)
	assert.Equal(t, 3*time.Second, j.RepeatDelay)
	assert.Equal(t, 4, j.RetryMax)
	assert.Equal(t, RepeatForever, j.Repeat)
	assert.Equal(t, time.Date(2031, 12, 24, 23, 30, 0, 987000000, time.UTC), j.DateEnable)
	assertMillisUTC(t, j.DateEnable)
	assertMillisUTC(t, j.DateCreated)
	assert.False(t, j.DateCreated.Equal(j.DateEnable))
	assert.Equal(t, map[string]any{"to": "x"}, j.Data)
}

func TestNewZeroOptionsMeanDefaults(t *testing.T) {
	j := New(nil, Options{})
	require.NoError(t, j.Err())
	assert.Equal(t, Normal, j.Priority, "a zero priority is Normal")
	assert.Equal(t, DefaultTimeout, j.Timeout, "a zero timeout is the default, not an instant timeout")
	assert.Equal(t, DefaultRetryMax, j.RetryMax, "a zero RetryMax is the default, as CreateJob's")
	assert.Equal(t, DefaultRetryDelay, j.RetryDelay)
	assert.Equal(t, DefaultRepeatDelay, j.RepeatDelay)
	d := New(nil, DefaultOptions())
	assert.Equal(t, []any{d.Priority, d.Timeout, d.RetryMax, d.RetryDelay, d.RepeatDelay, d.Repeat},
		[]any{j.Priority, j.Timeout, j.RetryMax, j.RetryDelay, j.RepeatDelay, j.Repeat}, "Options{} is DefaultOptions()")

	none := New(nil, Options{RetryMax: NoRetries})
	require.NoError(t, none.Err())
	assert.Zero(t, none.RetryMax, "NoRetries: never retried")
	assert.NoError(t, none.Validate())
	none.RetryMax = NoRetries
	assert.ErrorIs(t, none.Validate(), ErrInvalidRetryMax, "a job's RetryMax is exact: -1 is no count")
}

func TestNewInvalidOptions(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		want   error
	}{
		{"priority", func(o *Options) { o.Priority = 7 }, ErrInvalidPriority},
		{"timeout", func(o *Options) { o.Timeout = -1 }, ErrInvalidTimeout},
		{"retry max", func(o *Options) { o.RetryMax = -2 }, ErrInvalidRetryMax},
		{"retry delay", func(o *Options) { o.RetryDelay = -1 }, ErrInvalidRetryDelay},
		{"repeat", func(o *Options) { o.Repeat = -2 }, ErrInvalidRepeat},
		{"repeat delay", func(o *Options) { o.RepeatDelay = -1 }, ErrInvalidRepeatDelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.modify(&o)
			j := New(nil, o)
			require.NotNil(t, j)
			assert.ErrorIs(t, j.Err(), tt.want)
			assert.ErrorIs(t, j.Err(), ErrInvalid)
			assert.ErrorIs(t, j.Validate(), tt.want)
		})
	}
}

// The point of clock.go: jobs created in a tight loop get creation times that are
// distinct to the millisecond and increasing, so they start in order, but never more than
// a second ahead of the clock.
func TestNewCreationTimesIncreaseWithinASecond(t *testing.T) {
	const n = 3000
	clockCaughtUp(t)
	prev := New(nil, DefaultOptions())
	for i := range n {
		j := New(nil, DefaultOptions())
		now := time.Now()
		require.False(t, j.DateCreated.Before(prev.DateCreated), "job %d created at %v, before %v", i, j.DateCreated, prev.DateCreated)
		if i < 500 {
			require.True(t, j.DateCreated.After(prev.DateCreated), "job %d created at %v, not after %v", i, j.DateCreated, prev.DateCreated)
		}
		require.Less(t, j.DateCreated.Sub(now), time.Second, "job %d: creation time runs a second ahead", i)
		require.False(t, j.DateEnable.After(now), "only dateCreated is spread; dateEnable is never in the future")
		assertMillisUTC(t, j.DateCreated)
		prev = j
	}
}

// clockCaughtUp waits until the creation clock no longer runs ahead, as a burst before
// the test may have left it.
func clockCaughtUp(t *testing.T) {
	require.Eventually(t, func() bool {
		creationClock.Lock()
		defer creationClock.Unlock()
		return time.Until(creationClock.last) < 0
	}, 2*time.Second, time.Millisecond)
}

func TestNewCreationTimesDistinctConcurrently(t *testing.T) {
	const workers, each = 4, 100
	clockCaughtUp(t)
	var mu sync.Mutex
	seen := make(map[time.Time]bool, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			times := make([]time.Time, 0, each)
			for range each {
				times = append(times, New(nil, DefaultOptions()).DateCreated)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tm := range times {
				assert.False(t, seen[tm], "creation time %v handed out twice", tm)
				seen[tm] = true
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, workers*each)
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", true},                        // v1
		{"000003e8-2363-21ef-b200-325096b39f47", true},                        // v2
		{uuid.NewMD5(uuid.NameSpaceDNS, []byte("x")).String(), true},          // v3
		{"5127d082-fe7e-4e88-b1de-7093029695c3", true},                        // v4
		{uuid.NewSHA1(uuid.NameSpaceDNS, []byte("x")).String(), true},         // v5
		{strings.ToUpper("5127d082-fe7e-4e88-b1de-7093029695c3"), true},       // any case
		{"5127D082-fe7e-4E88-B1de-7093029695C3", true},                        // mixed case
		{"5127d082-fe7e-4e88-81de-7093029695c3", true},                        // variant 8
		{"5127d082-fe7e-4e88-91de-7093029695c3", true},                        // variant 9
		{"5127d082-fe7e-4e88-a1de-7093029695c3", true},                        // variant a
		{"5127d082-fe7e-4e88-B1de-7093029695c3", true},                        // variant B
		{StateDocumentID, true},                                               // a valid v4 itself
		{"", false},                                                           // empty
		{"{5127d082-fe7e-4e88-b1de-7093029695c3}", false},                     // braces
		{"urn:uuid:5127d082-fe7e-4e88-b1de-7093029695c3", false},              // urn
		{"5127d082fe7e4e88b1de7093029695c3", false},                           // no dashes
		{"5127d082-fe7e-0e88-b1de-7093029695c3", false},                       // version 0
		{"5127d082-fe7e-6e88-b1de-7093029695c3", false},                       // version 6
		{"5127d082-fe7e-7e88-b1de-7093029695c3", false},                       // version 7
		{"5127d082-fe7e-4e88-c1de-7093029695c3", false},                       // variant c
		{"5127d082-fe7e-4e88-71de-7093029695c3", false},                       // variant 7
		{"5127d082-fe7e-4e88-b1de-7093029695c", false},                        // short
		{"5127d082-fe7e-4e88-b1de-7093029695c3a", false},                      // long
		{"5127d082-fe7e-4e88-b1de-7093029695c3 ", false},                      // trailing space
		{" 5127d082-fe7e-4e88-b1de-7093029695c3", false},                      // leading space
		{"5127d082-fe7e-4e88-b1de-7093029695cg", false},                       // not hex
		{"5127d082-fe7e-4e88-b1de-7093029695c3\n", false},                     // newline
		{"00000000-0000-0000-0000-000000000000", false},                       // nil uuid
		{"5127d082_fe7e_4e88_b1de_7093029695c3", false},                       // wrong separators
		{"5127d08-2fe7e-4e88-b1de-7093029695c3", false},                       // dashes misplaced
		{"5127d082-fe7e-4e88-b1de-7093029695c3\x005127d082-fe7e-4e88", false}, // NUL inside
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			assert.Equal(t, tt.want, ValidID(tt.id))
		})
	}
}

func TestValidateFreshJob(t *testing.T) {
	assert.NoError(t, New(nil, DefaultOptions()).Validate())
	assert.NoError(t, New(42, DefaultOptions()).SetRepeat(RepeatForever).Validate())
}

func TestValidateNil(t *testing.T) {
	var j *Job
	err := j.Validate()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Job)
		want   error // nil: valid; else the specific sentinel (ErrInvalid is checked too)
	}{
		{"progress 0", func(j *Job) { j.Progress = 0 }, nil},
		{"progress 100", func(j *Job) { j.Progress = 100 }, nil},
		{"progress 42.5", func(j *Job) { j.Progress = 42.5 }, nil},
		{"repeat forever", func(j *Job) { j.Repeat = RepeatForever }, nil},
		{"extra field", func(j *Job) { j.Fields = map[string]any{"extra": 1, "Status": "x"} }, nil},
		{"other statuses", func(j *Job) { j.Status = Terminated }, nil},
		{"empty name", func(j *Job) { j.Name = "" }, nil}, // stored as null, as the original allows

		{"empty id", func(j *Job) { j.ID = "" }, ErrInvalidID},
		{"bad id", func(j *Job) { j.ID = "not-a-uuid" }, ErrInvalidID},
		{"version 6 id", func(j *Job) { j.ID = "5127d082-fe7e-6e88-b1de-7093029695c3" }, ErrInvalidID},
		{"priority 0", func(j *Job) { j.Priority = 0 }, ErrInvalidPriority},
		{"priority 41", func(j *Job) { j.Priority = 41 }, ErrInvalidPriority},
		{"timeout", func(j *Job) { j.Timeout = -1 }, ErrInvalidTimeout},
		{"retry delay", func(j *Job) { j.RetryDelay = -1 }, ErrInvalidRetryDelay},
		{"repeat delay", func(j *Job) { j.RepeatDelay = -1 }, ErrInvalidRepeatDelay},
		{"retry max", func(j *Job) { j.RetryMax = -1 }, ErrInvalidRetryMax},
		{"retry count", func(j *Job) { j.RetryCount = -1 }, ErrInvalidField},
		{"process count", func(j *Job) { j.ProcessCount = -1 }, ErrInvalidField},
		{"repeat -2", func(j *Job) { j.Repeat = -2 }, ErrInvalidRepeat},
		{"progress negative", func(j *Job) { j.Progress = -0.5 }, ErrInvalidField},
		{"progress above 100", func(j *Job) { j.Progress = 100.01 }, ErrInvalidField},
		{"progress NaN", func(j *Job) { j.Progress = math.NaN() }, ErrInvalidField},
		{"progress +Inf", func(j *Job) { j.Progress = math.Inf(1) }, ErrInvalidField},
		{"empty status", func(j *Job) { j.Status = "" }, ErrInvalidField},
		{"bad status", func(j *Job) { j.Status = "done" }, ErrInvalidField},
		{"zero dateCreated", func(j *Job) { j.DateCreated = time.Time{} }, ErrInvalidField},
		{"zero dateEnable", func(j *Job) { j.DateEnable = time.Time{} }, ErrInvalidDateEnable},
		{"reserved field status", func(j *Job) { j.Fields = map[string]any{"status": "active"} }, ErrInvalidField},
		{"reserved field data", func(j *Job) { j.Fields = map[string]any{"data": 1, "ok": 2} }, ErrInvalidField},
		{"reserved field queueId", func(j *Job) { j.Fields = map[string]any{"queueId": "x"} }, ErrInvalidField},
		{"setter error", func(j *Job) { j.SetRetryMax(-1) }, ErrInvalidRetryMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New(nil, DefaultOptions())
			tt.modify(j)
			err := j.Validate()
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	j := New(nil, DefaultOptions())
	j.ID = "x"
	j.Priority = 1
	j.Timeout = -1
	j.DateEnable = time.Time{}
	j.Fields = map[string]any{"log": nil}
	err := j.Validate()
	for _, want := range []error{ErrInvalidID, ErrInvalidPriority, ErrInvalidTimeout, ErrInvalidDateEnable, ErrInvalidField} {
		assert.ErrorIs(t, err, want)
	}
	assert.Contains(t, err.Error(), `"log"`)
}

func TestClampProgress(t *testing.T) {
	tests := []struct {
		in, want float64
	}{
		{-5, 0},
		{math.NaN(), 0},
		{math.Inf(-1), 0},
		{0, 0},
		{42.5, 42.5},
		{100, 100},
		{150, 100},
		{math.Inf(1), 100},
	}
	for _, tt := range tests {
		got := clampProgress(tt.in)
		assert.Equal(t, tt.want, got, "clampProgress(%v)", tt.in)
		assert.False(t, math.IsNaN(got))
	}
}

func TestDataAsWithoutAStoreFallsBackToJSON(t *testing.T) {
	// A job made by New has no store, so DataAs decodes by encoding/json.
	type mail struct {
		To string `json:"to"`
	}
	var m mail
	require.NoError(t, New(map[string]any{"to": "a@b.c"}, DefaultOptions()).DataAs(&m))
	assert.Equal(t, "a@b.c", m.To)
	assert.Error(t, New(func() {}, DefaultOptions()).DataAs(&m), "a value JSON cannot encode")
}

func TestDataAsAndResultDecodeByJSONNames(t *testing.T) {
	type mail struct {
		To     string `json:"to"`
		SentTo string `json:"sent_to"`
	}
	// A job read from the database holds maps keyed by json names; one made by New holds
	// the producer's struct: both decode alike, with or without a store.
	for _, j := range []*Job{
		New(map[string]any{"to": "a@b.c"}, DefaultOptions()),
		New(mail{To: "a@b.c"}, DefaultOptions()),
		attached(&fakeStore{}, mail{To: "a@b.c"}),
	} {
		j.Log = append(j.Log, LogEntry{Message: MessageCompleted, Data: mail{SentTo: "x@y.z"}})
		var data, result mail
		require.NoError(t, j.DataAs(&data))
		require.NoError(t, j.Result(&result))
		assert.Equal(t, mail{To: "a@b.c"}, data)
		assert.Equal(t, mail{SentTo: "x@y.z"}, result)
	}
	// Errors name the job.
	var n int
	err := New(map[string]any{"to": 1}, DefaultOptions()).DataAs(&n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "data")
}

func TestUniqueForAndDebounceSetters(t *testing.T) {
	for _, tc := range []struct {
		name string
		j    *Job
		want error
	}{
		{"window", New(nil, Options{}).SetUniqueKey("k").SetUniqueFor(time.Hour), nil},
		{"debounce, key set after", New(nil, Options{}).SetDebounce(time.Second).SetUniqueKey("k"), nil},
		{"negative window", New(nil, Options{}).SetUniqueKey("k").SetUniqueFor(-time.Hour), ErrInvalidUniqueFor},
		{"window under a millisecond", New(nil, Options{}).SetUniqueKey("k").SetUniqueFor(time.Microsecond), ErrInvalidUniqueFor},
		{"zero debounce", New(nil, Options{}).SetUniqueKey("k").SetDebounce(0), ErrInvalidDebounce},
		{"window without a key", New(nil, Options{}).SetUniqueFor(time.Hour), ErrInvalidUniqueFor},
		{"debounce without a key", New(nil, Options{}).SetDebounce(time.Hour), ErrInvalidDebounce},
	} {
		err := tc.j.Validate()
		if tc.want == nil {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, tc.want, tc.name)
			assert.ErrorIs(t, err, ErrInvalid, tc.name)
		}
	}
	j := New(nil, Options{}).SetUniqueKey("k").SetUniqueFor(90 * time.Second).SetDebounce(1500 * time.Millisecond)
	assert.Equal(t, 90*time.Second, j.UniqueFor())
	assert.Equal(t, 1500*time.Millisecond, j.Debounce())
	assert.Equal(t, int64(90000), j.Fields["rjqUniqueFor"], "stored in milliseconds")
	assert.False(t, j.Duplicate())

	// A field written by hand that is no duration is refused, and reads as none.
	j.Fields["rjqDebounce"] = "soon"
	assert.Zero(t, j.Debounce())
	assert.ErrorIs(t, j.Validate(), ErrInvalidDebounce)
}
