package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestReserveOnlyWhenTheQueueKnowsOfNothingToClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		feed  bool
		n     int
		setup func(h *harness)
		want  bool
	}{
		{name: "idle, with free slots", feed: true, n: 2, want: true},
		{name: "without a changefeed", feed: false, n: 1},
		{name: "more jobs than free slots", feed: true, n: 3},
		{name: "before its first read", feed: true, n: 1, setup: func(h *harness) { h.p.prod.idle = false }},
		{name: "a read is wanted", feed: true, n: 1, setup: func(h *harness) { h.p.prod.readWanted = true }},
		{name: "a read is due", feed: true, n: 1, setup: func(h *harness) { h.p.prod.readAt = time.Now().Add(-time.Millisecond) }},
		{name: "a job is hinted", feed: true, n: 1, setup: func(h *harness) {
			h.p.Hint(job.New(nil, job.Options{}), "another queue")
		}},
		{name: "jobs are buffered", feed: true, n: 1, setup: func(h *harness) {
			h.p.prod.buf = []*job.Job{job.New(nil, job.Options{})}
		}},
		{name: "a claim is under way", feed: true, n: 1, setup: func(h *harness) {
			h.p.act.update(func(a *activity) { a.claiming = true })
		}},
		{name: "paused", feed: true, n: 1, setup: func(h *harness) { h.p.cfg.Claiming = func() bool { return false } }},
		{name: "a job name has a limit", feed: true, n: 1, setup: func(h *harness) {
			h.p.cfg.Limits = func(rdb.LimitSet) Limitings {
				return Limitings{Names: map[string]Limiting{"mail": {Starts: 1}}}
			}
			h.p.prod.limitsChanged()
			h.p.prod.round()
		}},
		{name: "a group has a limit", feed: true, n: 1, setup: func(h *harness) {
			h.p.cfg.Limits = func(rdb.LimitSet) Limitings {
				return Limitings{Groups: map[string]int{"": 3}}
			}
			h.p.prod.limitsChanged()
			h.p.prod.round()
		}},
		{name: "slots reserved already", feed: true, n: 1, setup: func(h *harness) { h.p.Reserve(2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 2, tc.feed)
			h.p.prod.round() // short: the queue is idle
			if tc.setup != nil {
				tc.setup(h)
			}
			assert.Equal(t, tc.want, h.p.Reserve(tc.n))
		})
	}
}

func TestReservedSlotsAreNotClaimedAndTheirJobsRun(t *testing.T) {
	h := newHarness(t, 2, true)
	h.p.prod.round()
	require.True(t, h.p.Reserve(1))
	past := time.Now().Add(-time.Second)
	a, b := h.store.add(job.Normal, past), h.store.add(job.Normal, past)
	h.p.Hint(a, self)
	h.p.Hint(b, self)

	h.p.prod.round()
	assert.Len(t, h.of(EventActive), 1, "one slot free beside the reservation")

	inserted := h.store.insertClaimed()
	h.p.Started(1, []*job.Job{inserted})
	assert.Equal(t, 2, h.p.Running())
	assert.Contains(t, h.of(EventActive), inserted.ID)
	assert.Contains(t, h.of(EventProcessing), inserted.ID)
	assert.Equal(t, time.Duration(-1), h.p.prod.round(), "every slot taken")
}

// A job hinted while the one slot was reserved is claimed once the reservation ends
// with nothing started: Started wakes the producer for the slot (a released child that
// a release could not claim wakes it before the release's reservation ends).
func TestAReservationThatStartsNothingWakesTheProducer(t *testing.T) {
	h := newHarness(t, 1, true)
	h.p.prod.round()
	require.True(t, h.p.Reserve(1))
	a := h.store.add(job.Normal, time.Now().Add(-time.Second))
	h.p.Hint(a, self)
	h.p.prod.round()
	assert.Empty(t, h.of(EventActive), "the slot is reserved")
	select {
	case <-h.p.prod.wakeCh:
	default:
	}

	h.p.Started(1, nil)
	select {
	case <-h.p.prod.wakeCh:
	default:
		t.Fatal("Started freed the slot and did not wake the producer")
	}
	h.p.prod.round()
	assert.Equal(t, []string{a.ID}, h.of(EventActive))
}

func TestWaitIdleWaitsForAReservation(t *testing.T) {
	h := newHarness(t, 1, true)
	h.p.prod.round()
	require.True(t, h.p.Reserve(1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.p.WaitIdle(ctx), context.DeadlineExceeded, "a reservation is a claim under way")

	h.p.Unreserve(1, nil)
	assert.NoError(t, h.p.WaitIdle(context.Background()))
	assert.True(t, h.p.Reserve(1), "the slot is free again")
}

func TestAnInsertThatLostItsAnswerIsLookedFor(t *testing.T) {
	h := newHarness(t, 1, true)
	h.p.prod.round()
	require.True(t, h.p.Reserve(1))
	landed := h.store.insertClaimed()
	h.p.Unreserve(1, []string{landed.ID, "never written"})
	assert.False(t, h.p.Reserve(1), "not idle while it looks")

	h.p.prod.round()
	assert.Equal(t, []string{landed.ID}, h.of(EventActive), "the job the insert wrote runs here")
}

// A completed run of a job that lists children keeps its slot for them: its end does not
// wake the producer to claim (a read that would find nothing, and that the outcome's
// write would wait for), and the outcome's write starts the child in that slot. When the
// queue knows of a job to claim, the slot is freed for it instead.
func TestACompletedParentHandsItsSlotToItsChild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(h *harness)
		follows int
	}{
		{name: "nothing else to claim", follows: 1},
		{name: "a job is hinted", setup: func(h *harness) { h.p.Hint(job.New(nil, job.Options{}), "another queue") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 1, true)
			parent := h.store.add(job.Normal, time.Now().Add(-time.Second))
			child := h.store.blocked()
			h.p.cfg.Children = func(j *job.Job) []string {
				if j.ID == parent.ID {
					return []string{child.ID}
				}
				return nil
			}
			h.p.prod.round()
			require.Equal(t, []string{parent.ID}, h.of(EventActive))
			h.p.prod.idle = true // as after a read that found nothing more
			if tc.setup != nil {
				tc.setup(h)
			}
			drain := func() bool {
				select {
				case <-h.p.prod.wakeCh:
					return true
				default:
					return false
				}
			}
			drain()
			h.open.Do(func() { close(h.release) })
			require.Eventually(t, func() bool {
				h.p.act.mu.Lock()
				defer h.p.act.mu.Unlock()
				return h.p.act.running == 0 && h.p.act.pending == 1
			}, 5*time.Second, time.Millisecond)
			assert.False(t, drain(), "the parent's end woke the producer")

			require.NoError(t, h.p.comp.write(h.p.comp.take()))
			assert.Equal(t, tc.follows, h.store.follows)
			h.p.act.mu.Lock()
			reserved := h.p.act.reserved
			h.p.act.mu.Unlock()
			assert.Zero(t, reserved, "no slot stays reserved")
			if tc.follows > 0 {
				assert.Contains(t, h.of(EventProcessing), child.ID, "the child started from the outcome's write")
			} else {
				assert.NotContains(t, h.of(EventProcessing), child.ID)
				assert.True(t, drain(), "the freed slot wakes the producer")
			}
		})
	}
}
