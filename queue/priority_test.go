package queue_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// startLog records the handlers' starts, each with its claim's time (dateStarted).
type startLog struct {
	mu   sync.Mutex
	list []startRec
}

type startRec struct {
	id      string
	retry   int
	claimed time.Time
}

func (s *startLog) add(j *job.Job) {
	s.mu.Lock()
	s.list = append(s.list, startRec{id: j.ID, retry: j.RetryCount, claimed: j.DateStarted})
	s.mu.Unlock()
}

// waitStart waits, a minute at most, for the start of id at retry (the workers' events
// reach a queue without a changefeed only for its own runs).
func (s *startLog) waitStart(t *testing.T, id string, retry int) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, found := s.before(id, retry, time.Time{})
		return found
	}, time.Minute, 10*time.Millisecond, "job %s never started (retry %d)", id, retry)
}

// before counts the other jobs claimed after from and before the claim of id at retry,
// by the claims' times: the order the workers chose. The handlers' starts follow it but
// for the Go scheduler's, which a loaded machine (a -race run beside other packages')
// can hold back for longer than the other worker takes to claim its next jobs.
func (s *startLog) before(id string, retry int, from time.Time) (n int, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.list, func(st startRec) bool { return st.id == id && st.retry == retry })
	if i < 0 {
		return 0, false
	}
	claimed := s.list[i].claimed
	for _, st := range s.list {
		if st.id != id && st.claimed.After(from) && st.claimed.Before(claimed) {
			n++
		}
	}
	return n, true
}

// priorityWorkers are two queues of concurrency 5 on one table, each its own worker
// (as two processes' are), processing with handle, the first one also the adder.
func priorityWorkers(t *testing.T, feed bool, handle queue.Handler) (*queue.Queue, int) {
	const queues, concurrency = 2, 5
	opts := func() *queue.Options {
		// Beats every 100 ms: the workers learn of each other, and claim by parts, at once.
		return &queue.Options{Concurrency: concurrency, NoChangeFeed: !feed, Heartbeat: 400 * time.Millisecond, MasterInterval: -1}
	}
	f := newFixture(t, opts())
	other := newQueue(t, f, opts())
	require.NoError(t, f.q.Process(handle))
	require.NoError(t, other.Process(handle))
	return f.q, 2 * queues * concurrency
}

// A delayed job keeps its priority's place once it falls due: it is claimed within the
// bound of jobs that can be in flight or claimed together (2 × workers × concurrency)
// ahead of the lower-priority jobs queued before it, with or without changefeeds (issue
// 35: without one, the workers claimed from what they had read ahead).
func TestADelayedJobKeepsItsPlaceAcrossWorkers(t *testing.T) {
	for _, feed := range []bool{true, false} {
		t.Run(map[bool]string{true: "feed", false: "no feed"}[feed], func(t *testing.T) {
			t.Parallel()
			var s startLog
			q, bound := priorityWorkers(t, feed, func(ctx context.Context, j *job.Job) (any, error) {
				s.add(j)
				time.Sleep(10 * time.Millisecond) // the work
				return nil, nil
			})
			low := make([]*job.Job, 400)
			for i := range low {
				low[i] = q.CreateJob(i).SetPriority(job.Low)
			}
			due := time.Now().Add(300 * time.Millisecond)
			high := q.CreateJob("high").SetPriority(job.High).SetDateEnable(due)
			_, err := q.AddJob(testContext(t), append(low, high)...)
			require.NoError(t, err)
			s.waitStart(t, high.ID, 0)
			n, found := s.before(high.ID, 0, due)
			require.True(t, found)
			t.Logf("%d claims after it fell due, bound %d", n, bound)
			assert.LessOrEqual(t, n, bound, "claims of lower-priority jobs after it fell due")
		})
	}
}

// A retry keeps its priority's place the same way once its delay has passed.
func TestARetryKeepsItsPlaceAcrossWorkers(t *testing.T) {
	for _, feed := range []bool{true, false} {
		t.Run(map[bool]string{true: "feed", false: "no feed"}[feed], func(t *testing.T) {
			t.Parallel()
			var s startLog
			var mu sync.Mutex
			var failedAt time.Time // the failure's time, which its dateEnable was computed from
			const delay = 300 * time.Millisecond
			q, bound := priorityWorkers(t, feed, func(ctx context.Context, j *job.Job) (any, error) {
				if j.Priority == job.High && j.RetryCount == 1 {
					mu.Lock()
					// The claim keeps dateFinished (and writes its lease into dateEnable).
					failedAt = j.DateFinished
					mu.Unlock()
				}
				// After failedAt is set: the test waits for this start, then reads it.
				s.add(j)
				time.Sleep(10 * time.Millisecond) // the work
				if j.Priority == job.High && j.RetryCount == 0 {
					return nil, errors.New("fails once")
				}
				return nil, nil
			})
			low := make([]*job.Job, 400)
			for i := range low {
				low[i] = q.CreateJob(i).SetPriority(job.Low)
			}
			high := q.CreateJob("high").SetPriority(job.High).SetRetryDelay(delay)
			_, err := q.AddJob(testContext(t), append([]*job.Job{high}, low...)...)
			require.NoError(t, err)
			s.waitStart(t, high.ID, 1)
			// Counted from the dateEnable the failure wrote, not from the handler's return,
			// which comes before it: claims in between are not late.
			mu.Lock()
			at := failedAt
			mu.Unlock()
			require.False(t, at.IsZero(), "the retry's run saw no dateFinished")
			n, found := s.before(high.ID, 1, at.Add(delay))
			require.True(t, found)
			t.Logf("%d claims after its retry fell due, bound %d", n, bound)
			assert.LessOrEqual(t, n, bound, "claims of lower-priority jobs after its retry fell due")
			s.mu.Lock()
			defer s.mu.Unlock()
			assert.True(t, slices.ContainsFunc(s.list, func(st startRec) bool { return st.id == high.ID && st.retry == 0 }))
		})
	}
}
