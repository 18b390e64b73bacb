package job

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRepeating(t *testing.T) {
	for _, tc := range []struct {
		repeat, processCount int
		want                 bool
	}{
		{0, 1, false},
		{RepeatForever, 1, true},
		{RepeatForever, 1000, true},
		{3, 1, true},
		{3, 3, true},  // the third run is followed by the fourth
		{3, 4, false}, // repeat 3 means 4 runs in all
		{1, 2, false},
	} {
		j := &Job{Repeat: tc.repeat, ProcessCount: tc.processCount}
		assert.Equal(t, tc.want, j.Repeating(), "repeat %d after run %d", tc.repeat, tc.processCount)
	}
}

func TestAfterSuccess(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	enable := now.Add(-time.Minute)
	for _, tc := range []struct {
		name string
		job  Job
		want Transition
	}{
		{"completed", Job{Repeat: 0, ProcessCount: 1, RetryCount: 1, DateEnable: enable},
			Transition{Status: Completed, DateEnable: enable, RetryCount: 1, Progress: 100, LogType: Information}},
		{"repeats after the repeat delay", Job{Repeat: 2, ProcessCount: 1, RepeatDelay: time.Hour, DateEnable: enable},
			Transition{Status: Waiting, DateEnable: now.Add(time.Hour), Progress: 0, LogType: Information, Repeating: true}},
		{"last repeat completes", Job{Repeat: 2, ProcessCount: 3, RepeatDelay: time.Hour, DateEnable: enable},
			Transition{Status: Completed, DateEnable: enable, Progress: 100, LogType: Information}},
	} {
		assert.Equal(t, tc.want, AfterSuccess(&tc.job, now), tc.name)
	}
}

// The retry arithmetic of the original's "Job Retry" steps: retryDelay × retryCount after
// each failure, counting the failure that just happened.
func TestAfterFailure(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	delay := 10 * time.Minute
	for _, tc := range []struct {
		name string
		job  Job
		want Transition
	}{
		{"first failure: retry in 10 minutes", Job{RetryMax: 3, RetryCount: 0, RetryDelay: delay},
			Transition{Status: Failed, DateEnable: now.Add(10 * time.Minute), RetryCount: 1, LogType: Warning, Retry: true}},
		{"second failure: retry in 20 minutes", Job{RetryMax: 3, RetryCount: 1, RetryDelay: delay},
			Transition{Status: Failed, DateEnable: now.Add(20 * time.Minute), RetryCount: 2, LogType: Warning, Retry: true}},
		{"third failure: retry in 30 minutes", Job{RetryMax: 3, RetryCount: 2, RetryDelay: delay},
			Transition{Status: Failed, DateEnable: now.Add(30 * time.Minute), RetryCount: 3, LogType: Warning, Retry: true}},
		{"fourth failure: terminated", Job{RetryMax: 3, RetryCount: 3, RetryDelay: delay},
			Transition{Status: Terminated, DateEnable: now, RetryCount: 3, LogType: Error}},
		{"no retries", Job{RetryMax: 0, RetryDelay: delay},
			Transition{Status: Terminated, DateEnable: now, LogType: Error}},
		{"repeating job waits for its next repeat, retry count reset", Job{RetryMax: 1, RetryCount: 1, Repeat: RepeatForever, ProcessCount: 5, RepeatDelay: time.Hour},
			Transition{Status: Waiting, DateEnable: now.Add(time.Hour), RetryCount: 0, LogType: Error, Repeating: true}},
		{"a retry comes before the repeat", Job{RetryMax: 1, RetryCount: 0, Repeat: RepeatForever, RetryDelay: time.Second, RepeatDelay: time.Hour},
			Transition{Status: Failed, DateEnable: now.Add(time.Second), RetryCount: 1, LogType: Warning, Retry: true}},
		{"repeats used up: terminated", Job{RetryMax: 0, Repeat: 1, ProcessCount: 2, RepeatDelay: time.Hour},
			Transition{Status: Terminated, DateEnable: now, LogType: Error}},
	} {
		assert.Equal(t, tc.want, AfterFailure(&tc.job, now), tc.name)
	}
}

func TestCancelReason(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
		ok     bool
	}{
		{Cancel("customer left"), "customer left", true},
		{Cancel(""), MessageCancel, true},
		{fmt.Errorf("wrapped: %w", Cancel("why")), "why", true},
		{fmt.Errorf("plain: %w", ErrCancel), MessageCancel, true},
		{errors.New("other"), "", false},
		{nil, "", false},
	} {
		reason, ok := CancelReason(tc.err)
		assert.Equal(t, tc.reason, reason, "%v", tc.err)
		assert.Equal(t, tc.ok, ok, "%v", tc.err)
	}
	assert.ErrorIs(t, Cancel("x"), ErrCancel)
	assert.NotErrorIs(t, Cancel("x"), ErrCancelled, "a handler's cancel is not the context cause")
	assert.Equal(t, "job: cancelled by its handler: x", Cancel("x").Error())
}
