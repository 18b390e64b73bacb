package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// KeepsPlace is the rule the insert of a unique key's job applies on the server
// (keepForUnique), for the in-memory Adder; the server's is tested through AddJob.
func TestKeepsPlace(t *testing.T) {
	now := time.Now()
	stored := func(s job.Status, finished time.Time) *job.Job {
		j := job.New(nil, job.Options{})
		j.Status, j.DateFinished = s, finished
		return j
	}
	plain := job.New(nil, job.Options{}).SetUniqueKey("k")
	window := job.New(nil, job.Options{}).SetUniqueKey("k").SetUniqueFor(time.Hour)
	debounce := job.New(nil, job.Options{}).SetUniqueKey("k").SetDebounce(time.Second)
	for _, tc := range []struct {
		name string
		old  *job.Job
		j    *job.Job
		want bool
	}{
		{"nothing there", nil, plain, false},
		{"waiting", stored(job.Waiting, time.Time{}), plain, true},
		{"active", stored(job.Active, time.Time{}), plain, true},
		{"failed, to be retried", stored(job.Failed, now.Add(-time.Minute)), plain, true},
		{"completed, no window", stored(job.Completed, now.Add(-time.Second)), plain, false},
		{"completed within the window", stored(job.Completed, now.Add(-time.Minute)), window, true},
		{"cancelled within the window", stored(job.Cancelled, now.Add(-time.Minute)), window, true},
		{"completed before the window", stored(job.Completed, now.Add(-2*time.Hour)), window, false},
		{"finished with no time", stored(job.Terminated, time.Time{}), window, false},
		{"waiting, debounced: replaced", stored(job.Waiting, time.Time{}), debounce, false},
		{"active, debounced: kept", stored(job.Active, time.Time{}), debounce, true},
		{"failed, debounced: kept", stored(job.Failed, now), debounce, true},
	} {
		assert.Equal(t, tc.want, KeepsPlace(tc.old, tc.j, now), tc.name)
	}
}

func TestDebouncedStart(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	j := job.New(nil, job.Options{})
	j.DateEnable = now
	assert.Equal(t, now, DebouncedStart(j, now), "no debounce: its own time")
	j.SetUniqueKey("k").SetDebounce(time.Second)
	assert.Equal(t, now.Add(time.Second), DebouncedStart(j, now), "a debounce from now")
	j.DateEnable = now.Add(time.Hour)
	assert.Equal(t, now.Add(time.Hour), DebouncedStart(j, now), "a later start stays")
}
