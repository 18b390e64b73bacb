package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		name string
		b    job.Backoff
		n    int
		want time.Duration
	}{
		{"linear first", job.Backoff{}, 1, 10 * time.Minute},
		{"linear third", job.Backoff{}, 3, 30 * time.Minute},
		{"exponential first", job.Backoff{Exponential: true, Min: time.Second}, 1, time.Second},
		{"exponential fourth", job.Backoff{Exponential: true, Min: time.Second}, 4, 8 * time.Second},
		{"exponential capped", job.Backoff{Exponential: true, Min: time.Second, Max: 5 * time.Second}, 4, 5 * time.Second},
		{"exponential huge n stays capped", job.Backoff{Exponential: true, Min: time.Second, Max: time.Hour}, 1000, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job.New(nil, job.DefaultOptions()).SetBackoff(tt.b)
			require.NoError(t, j.Err())
			assert.Equal(t, tt.want, RetryDelay(j, tt.n, nil))
		})
	}
}

func TestBackoffRoundTripsThroughTheDocument(t *testing.T) {
	b := job.Backoff{Exponential: true, Min: 2 * time.Second, Max: time.Minute, Jitter: 0.1}
	j := job.New(nil, job.DefaultOptions()).SetBackoff(b)
	doc := j.Document()
	back, err := FromDocument(nil, fromDB(doc).(map[string]any))
	require.NoError(t, err)
	assert.Equal(t, b, back.Backoff(), "a Go worker after a Go worker keeps the policy")
	assert.Equal(t, job.Backoff{}, job.New(nil, job.DefaultOptions()).SetBackoff(b).SetBackoff(job.Backoff{}).Backoff())
}

func TestBackoffJitterStaysInBounds(t *testing.T) {
	j := job.New(nil, job.DefaultOptions()).SetBackoff(job.Backoff{Exponential: true, Min: time.Second, Jitter: 0.5})
	for range 200 {
		d := RetryDelay(j, 2, nil)
		assert.GreaterOrEqual(t, d, time.Second)
		assert.LessOrEqual(t, d, 3*time.Second)
	}
}

func TestLeaseEnd(t *testing.T) {
	now := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	j := job.New(nil, job.DefaultOptions())
	j.Timeout, j.RetryDelay, j.RetryCount = 5*time.Minute, 10*time.Minute, 2
	for _, tt := range []struct {
		name      string
		heartbeat time.Duration
		want      time.Time
	}{
		{"the original's lease: timeout + retryDelay × retryCount", 0, now.Add(25 * time.Minute)},
		{"heartbeats off (negative)", -time.Second, now.Add(25 * time.Minute)},
		{"a heartbeat lease that ends sooner", 11 * time.Second, now.Add(11 * time.Second)},
		{"never later than the original's", time.Hour, now.Add(25 * time.Minute)},
	} {
		assert.Equal(t, tt.want, LeaseEnd(j, now, tt.heartbeat), tt.name)
	}
}

func TestRetryDelayFollowsTheJobsBackoff(t *testing.T) {
	j := job.New(nil, job.DefaultOptions())
	assert.Equal(t, 3*j.RetryDelay, RetryDelay(j, 3, nil), "linear by default")
	j.SetBackoff(job.Backoff{Exponential: true, Min: time.Second, Max: time.Minute})
	assert.Equal(t, 4*time.Second, RetryDelay(j, 3, nil))
}

func TestRetryDelayCustom(t *testing.T) {
	custom := func(_ *job.Job, n int) time.Duration { return time.Duration(n*n) * time.Second }
	j := job.New(nil, job.DefaultOptions())
	assert.Equal(t, 9*time.Second, RetryDelay(j, 3, custom), "the queue's function for a linear job")
	assert.Equal(t, time.Duration(0), RetryDelay(j, 1, func(*job.Job, int) time.Duration { return -time.Hour }), "never negative")
	j.SetBackoff(job.Backoff{Exponential: true, Min: time.Second})
	assert.Equal(t, 4*time.Second, RetryDelay(j, 3, custom), "a job's own exponential policy wins")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lin := job.New(nil, job.DefaultOptions())
	assert.Equal(t, now.Add(time.Second), AfterFailure(lin, now, custom).DateEnable)
}
