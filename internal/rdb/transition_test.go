package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestRepeating(t *testing.T) {
	for _, tc := range []struct {
		repeat, processCount int
		want                 bool
	}{
		{0, 1, false},
		{job.RepeatForever, 1, true},
		{job.RepeatForever, 1000, true},
		{3, 1, true},
		{3, 3, true},  // the third run is followed by the fourth
		{3, 4, false}, // repeat 3 means 4 runs in all
		{1, 2, false},
	} {
		j := &job.Job{Repeat: tc.repeat, ProcessCount: tc.processCount}
		assert.Equal(t, tc.want, Repeating(j), "repeat %d after run %d", tc.repeat, tc.processCount)
	}
}

func TestAfterSuccess(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	enable := now.Add(-time.Minute)
	for _, tc := range []struct {
		name string
		job  job.Job
		want Transition
	}{
		{"completed", job.Job{Repeat: 0, ProcessCount: 1, RetryCount: 1, DateEnable: enable},
			Transition{Status: job.Completed, DateEnable: enable, RetryCount: 1, Progress: 100, LogType: job.Information}},
		{"repeats after the repeat delay", job.Job{Repeat: 2, ProcessCount: 1, RepeatDelay: time.Hour, DateEnable: enable},
			Transition{Status: job.Waiting, DateEnable: now.Add(time.Hour), Progress: 0, LogType: job.Information, Repeating: true}},
		{"last repeat completes", job.Job{Repeat: 2, ProcessCount: 3, RepeatDelay: time.Hour, DateEnable: enable},
			Transition{Status: job.Completed, DateEnable: enable, Progress: 100, LogType: job.Information}},
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
		job  job.Job
		want Transition
	}{
		{"first failure: retry in 10 minutes", job.Job{RetryMax: 3, RetryCount: 0, RetryDelay: delay},
			Transition{Status: job.Failed, DateEnable: now.Add(10 * time.Minute), RetryCount: 1, LogType: job.Warning, Retry: true}},
		{"second failure: retry in 20 minutes", job.Job{RetryMax: 3, RetryCount: 1, RetryDelay: delay},
			Transition{Status: job.Failed, DateEnable: now.Add(20 * time.Minute), RetryCount: 2, LogType: job.Warning, Retry: true}},
		{"third failure: retry in 30 minutes", job.Job{RetryMax: 3, RetryCount: 2, RetryDelay: delay},
			Transition{Status: job.Failed, DateEnable: now.Add(30 * time.Minute), RetryCount: 3, LogType: job.Warning, Retry: true}},
		{"fourth failure: terminated", job.Job{RetryMax: 3, RetryCount: 3, RetryDelay: delay},
			Transition{Status: job.Terminated, DateEnable: now, RetryCount: 3, LogType: job.Error}},
		{"no retries", job.Job{RetryMax: 0, RetryDelay: delay},
			Transition{Status: job.Terminated, DateEnable: now, LogType: job.Error}},
		{"repeating job waits for its next repeat, retry count reset", job.Job{RetryMax: 1, RetryCount: 1, Repeat: job.RepeatForever, ProcessCount: 5, RepeatDelay: time.Hour},
			Transition{Status: job.Waiting, DateEnable: now.Add(time.Hour), RetryCount: 0, LogType: job.Error, Repeating: true}},
		{"a retry comes before the repeat", job.Job{RetryMax: 1, RetryCount: 0, Repeat: job.RepeatForever, RetryDelay: time.Second, RepeatDelay: time.Hour},
			Transition{Status: job.Failed, DateEnable: now.Add(time.Second), RetryCount: 1, LogType: job.Warning, Retry: true}},
		{"repeats used up: terminated", job.Job{RetryMax: 0, Repeat: 1, ProcessCount: 2, RepeatDelay: time.Hour},
			Transition{Status: job.Terminated, DateEnable: now, LogType: job.Error}},
	} {
		assert.Equal(t, tc.want, AfterFailure(&tc.job, now, nil), tc.name)
	}
}
