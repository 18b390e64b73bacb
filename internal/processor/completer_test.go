package processor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// outcomeOf is the outcome of the run of j in its current claim, ending in status.
func outcomeOf(j *job.Job, status job.Status, event string) *outcome {
	return &outcome{
		rn:    &run{claimed: *j},
		write: rdb.Outcome{ID: j.ID, ProcessCount: j.ProcessCount, Status: status},
		event: event,
	}
}

// A lost outcome answer: a run's outcome lands but its answer is lost, so it is written again;
// meanwhile the job, failed for a retry, is claimed again and its next run succeeds. The
// retried write finds the first outcome landed: that must not make the second count as
// written (it was dropped, and its completed event raised anyway).
func TestAnOutcomeThatLandedIsNotTakenForTheNextRunsOutcome(t *testing.T) {
	h := newHarness(t, 1, false)
	s, c := h.store, h.p.comp
	j := s.add(job.Normal, time.Now())
	claim := func() *job.Job {
		res, err := s.Claim(t.Context(), nil, []rdb.Claim{s.NewClaim(s.job(j.ID), time.Now(), time.Now().Add(time.Minute))})
		require.NoError(t, err)
		require.Len(t, res.Claimed, 1)
		return res.Claimed[0]
	}

	first := outcomeOf(claim(), job.Failed, EventFailed)
	now := time.Now()
	first.write.DateEnable = &now // due for its retry at once
	s.loseFinish = 1
	require.ErrorIs(t, c.write([]*outcome{first}), errLostAnswer)
	c.putBack([]*outcome{first})
	require.Equal(t, job.Failed, s.status(j.ID), "the first outcome landed")

	second := outcomeOf(claim(), job.Completed, EventCompleted)
	c.add(second)
	outs := c.take()
	require.Len(t, outs, 2, "the first outcome, again, and the second")
	require.NoError(t, c.write(outs))

	assert.Equal(t, job.Completed, s.status(j.ID), "the second run's outcome is written")
	assert.Equal(t, []rdb.RunKey{{ID: j.ID, ProcessCount: 1}, {ID: j.ID, ProcessCount: 2}}, s.finished)
	assert.Equal(t, []string{j.ID}, h.of(EventFailed), "the first outcome's event, once")
	assert.Equal(t, []string{j.ID}, h.of(EventCompleted), "the second's, once")
}

func TestRetryWaitNeverOutlastsALease(t *testing.T) {
	now := time.Now()
	withLease := func(left time.Duration) []*outcome {
		rn := &run{}
		rn.leaseEnd.Store(now.Add(left).UnixNano())
		return []*outcome{{rn: rn}}
	}
	for _, c := range []struct {
		name          string
		backoff, left time.Duration
		min, max      time.Duration
	}{
		{"the backoff, jittered, when the lease is far", time.Second, time.Hour, 500 * time.Millisecond, time.Second},
		{"at most half the lease left", 30 * time.Second, 4 * time.Second, 20 * time.Millisecond, 2 * time.Second},
		{"never below the floor", 30 * time.Second, 10 * time.Millisecond, minRetryWait, minRetryWait},
		{"the backoff alone once the lease has ended", 8 * time.Second, -time.Second, 4 * time.Second, 8 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 100 {
				w := retryWait(c.backoff, withLease(c.left), now)
				if w < c.min || w > c.max {
					t.Fatalf("retryWait = %v, want within %v..%v", w, c.min, c.max)
				}
			}
		})
	}
}

// The gather ends at once when no job runs, when the last running job finishes, and
// after gatherWindow at most while jobs keep running.
func TestGatherWaitsForRunningJobsUpToItsWindow(t *testing.T) {
	h := newHarness(t, 1, false)
	p := h.p

	start := time.Now()
	p.gather()
	assert.Less(t, time.Since(start), gatherWindow, "no job runs: no wait")

	p.act.update(func(a *activity) { a.running = 1 })
	start = time.Now()
	p.gather()
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, gatherWindow, "a job runs: it waits its window")
	assert.Less(t, elapsed, 50*gatherWindow, "and no longer")

	done := make(chan struct{})
	go func() {
		defer close(done)
		p.gather()
	}()
	p.act.update(func(a *activity) { a.running = 0 }) // the last job finished
	<-done
}
