package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// checkStart refuses a deadline that has passed, or that a debounce moves the start past.
func TestCheckStart(t *testing.T) {
	now := time.Now()
	newJob := func(deadline, debounce time.Duration) *job.Job {
		j := job.New(nil, job.Options{})
		if debounce > 0 {
			j.SetUniqueKey("k").SetDebounce(debounce)
		}
		if deadline != 0 {
			if j.Fields == nil {
				j.Fields = map[string]any{}
			}
			j.Fields["rjqDeadline"] = now.Add(deadline) // by hand: the setter checks against the clock
		}
		return j
	}
	for _, tc := range []struct {
		name               string
		deadline, debounce time.Duration
		says               string
	}{
		{name: "no deadline"},
		{name: "a deadline ahead", deadline: time.Minute},
		{name: "a deadline passed", deadline: -time.Second, says: "has passed"},
		{name: "a debounce that ends before the deadline", deadline: time.Hour, debounce: time.Minute},
		{name: "a debounce that ends after the deadline", deadline: time.Minute, debounce: time.Hour, says: "could never start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkStart(newJob(tc.deadline, tc.debounce), now)
			if tc.says == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, job.ErrInvalidDeadline)
			assert.Contains(t, err.Error(), tc.says)
			assert.NotContains(t, err.Error(), "m=")
		})
	}
}
