package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// harness is a processor on a fakeStore whose rounds the test drives one at a time: no
// loop runs, and handlers hold their slot until release is closed.
type harness struct {
	p       *Processor
	store   *fakeStore
	release chan struct{}
	open    sync.Once

	mu     sync.Mutex
	events []Event
}

const self = "host:db:q:1:self"

func newHarness(t *testing.T, concurrency int, feed bool) *harness {
	h := &harness{store: newFakeStore(self), release: make(chan struct{})}
	h.p = New(Config{
		Store:          h.store,
		QueueID:        self,
		Name:           "q",
		Concurrency:    func() int { return concurrency },
		Claiming:       func() bool { return true },
		Ready:          func(context.Context) error { return nil },
		Feed:           feed,
		HandlerContext: context.Background,
		LeaseEnd:       func(_ *job.Job, now time.Time) time.Time { return now.Add(time.Minute) },
		Handler: func(ctx context.Context, _ *job.Job) (any, error) {
			select {
			case <-h.release:
			case <-ctx.Done():
			}
			return nil, nil
		},
		Hooks: Hooks{Emit: func(e Event) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.events = append(h.events, e)
		}},
	})
	t.Cleanup(func() {
		h.open.Do(func() { close(h.release) })
		h.p.svc.Cancel(errors.New("test over"))
		h.p.exec.handlers.Wait()
	})
	return h
}

// of returns the ids of the events of type typ so far, in order.
func (h *harness) of(typ string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for _, e := range h.events {
		if e.Type == typ {
			ids = append(ids, e.JobID)
		}
	}
	return ids
}

// finishAll lets the runs end, and those to come run through, and waits until every slot
// is free.
func (h *harness) finishAll(t *testing.T) {
	h.open.Do(func() { close(h.release) })
	require.Eventually(t, func() bool { return h.p.exec.count() == 0 }, 5*time.Second, time.Millisecond)
}

func TestRoundClaimsTheFreeSlotsInPriorityOrder(t *testing.T) {
	h := newHarness(t, 2, false)
	past := time.Now().Add(-time.Second)
	low := h.store.add(job.Low, past)
	high := h.store.add(job.High, past)
	normal := h.store.add(job.Normal, past)
	highest := h.store.add(job.Highest, past)

	next := h.p.prod.round()

	assert.Equal(t, []string{highest.ID, high.ID}, h.of(EventActive), "the two highest first")
	assert.Equal(t, time.Duration(-1), next, "every slot taken: wait for one")
	assert.Equal(t, []int{8}, h.store.asked, "a read takes a few rounds' worth")
	assert.Equal(t, job.Waiting, h.store.status(low.ID))
	assert.Equal(t, time.Duration(-1), h.p.prod.round(), "no slot free: wait for one")

	h.finishAll(t)
	h.p.prod.round()
	assert.Equal(t, []string{highest.ID, high.ID, normal.ID, low.ID}, h.of(EventActive), "then the rest, in order")
	reads, _ := h.store.counts()
	assert.Equal(t, 1, reads, "from what the first read found")
}

// A candidate whose start deadline has passed is cancelled with that reason, never
// claimed, and does not hold back the jobs behind it.
func TestRoundCancelsJobsPastTheirDeadline(t *testing.T) {
	h := newHarness(t, 5, false)
	late := h.store.add(job.Highest, time.Now().Add(-time.Second))
	h.store.deadline(late.ID, time.Now().Add(-time.Millisecond))
	onTime := h.store.add(job.Normal, time.Now().Add(-time.Second))
	h.store.deadline(onTime.ID, time.Now().Add(time.Hour))
	plain := h.store.add(job.Low, time.Now().Add(-time.Second))
	h.p.prod.round()
	assert.Equal(t, []string{onTime.ID, plain.ID}, h.of(EventActive))
	assert.Equal(t, []string{late.ID}, h.of(EventCancelled))
	assert.Equal(t, job.Cancelled, h.store.status(late.ID))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Type == EventCancelled {
			assert.Equal(t, job.MessageDeadlinePassed, e.Reason)
		}
	}
}

// A hinted job past its deadline is dropped with its hint: the next round claims the job
// behind it, instead of meeting the cancelled one again.
func TestAHintPastItsDeadlineGivesWayToTheNext(t *testing.T) {
	h := newHarness(t, 1, true)
	h.p.prod.round() // short: the queue is idle
	late := h.store.add(job.Highest, time.Now().Add(-time.Second))
	h.store.deadline(late.ID, time.Now().Add(-time.Millisecond))
	late.Fields = map[string]any{"rjqDeadline": time.Now().Add(-time.Millisecond)}
	next := h.store.add(job.Low, time.Now().Add(-time.Second))
	h.p.Hint(late, self)
	h.p.Hint(next, self)
	assert.Equal(t, time.Duration(0), h.p.prod.round(), "a job past its deadline: go again at once")
	h.p.prod.round()
	assert.Equal(t, []string{late.ID}, h.of(EventCancelled))
	assert.Equal(t, []string{next.ID}, h.of(EventActive))
}

func TestRoundWaitsForTheNextDelayedJob(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{"soon", 300 * time.Millisecond},
		{"later", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 5, false)
			h.store.add(job.Normal, time.Now().Add(-time.Second))
			h.store.add(job.Highest, time.Now().Add(tc.delay))
			next := h.p.prod.round()
			assert.Len(t, h.of(EventActive), 1, "the due job runs; the delayed one, of higher priority, does not hold it back")
			assert.InDelta(t, float64(tc.delay), float64(next), float64(50*time.Millisecond), "wake when the delayed job falls due")
		})
	}
}

func TestAnEmptyQueueRaisesIdleOnceAndWaitsForAWake(t *testing.T) {
	h := newHarness(t, 3, false)
	assert.Equal(t, time.Duration(-1), h.p.prod.round())
	assert.Equal(t, time.Duration(-1), h.p.prod.round())
	assert.Len(t, h.of(EventIdle), 1, "idle once per stretch of idleness")
}

func TestAnIdleProducerClaimsHintsWithoutReading(t *testing.T) {
	for _, tc := range []struct {
		name      string
		feed      bool
		wantReads int
	}{
		{"with the changefeed, hints suffice", true, 1},
		{"without it, every round reads", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 2, tc.feed)
			h.p.prod.round() // short: the queue is idle
			j := h.store.add(job.Normal, time.Now().Add(-time.Millisecond))
			h.p.Hint(j, self)
			h.p.prod.round()
			reads, claims := h.store.counts()
			assert.Equal(t, tc.wantReads, reads)
			assert.Equal(t, 1, claims)
			assert.Equal(t, []string{j.ID}, h.of(EventActive))
		})
	}
}

func TestAFreedSlotReadsOnlyWhenNoFeedTellsWhatCame(t *testing.T) {
	for _, tc := range []struct {
		feed, idle bool
		wantRead   bool
	}{
		{feed: true, idle: true, wantRead: false},
		{feed: true, idle: false, wantRead: true},
		{feed: false, idle: true, wantRead: true},
	} {
		t.Run(fmt.Sprintf("feed=%v idle=%v", tc.feed, tc.idle), func(t *testing.T) {
			h := newHarness(t, 1, tc.feed)
			pr := h.p.prod
			pr.readWanted, pr.idle = false, tc.idle
			pr.slotFreed()
			read, check := pr.shouldRead(time.Now(), 1)
			assert.Equal(t, tc.wantRead, read)
			assert.False(t, check, "no buffer to keep")
		})
	}
}

func TestHintsWaitTheirTurn(t *testing.T) {
	h := newHarness(t, 1, true)
	h.p.prod.setPeers([]string{"a", "b", self}) // self is third
	h.p.prod.round()                            // idle
	j := h.store.add(job.Normal, time.Now().Add(-time.Millisecond))
	h.p.Hint(j, "a") // a added it and runs jobs: a goes first, b second, self third
	next := h.p.prod.round()
	assert.Empty(t, h.of(EventActive), "not its turn yet")
	assert.InDelta(t, float64(2*staggerStep), float64(next), float64(10*time.Millisecond))

	h.p.Taken(j.ID) // a claimed it: the feed says so
	assert.Equal(t, time.Duration(-1), h.p.prod.round(), "nothing left to wait for")
	_, claims := h.store.counts()
	assert.Zero(t, claims, "a job another queue took costs this one no claim")
}

func TestRank(t *testing.T) {
	peers := []string{"a", "b", "c", self}
	for _, tc := range []struct {
		name  string
		peers []string
		by    string
		want  func(n int) bool
	}{
		{"its own job goes first", peers, self, func(n int) bool { return n == 0 }},
		{"behind the adder when the adder is a worker", peers, "b", func(n int) bool { return n == 2 }},
		{"by the job's hash otherwise", peers, "node-queue", func(n int) bool { return n >= 0 && n < 4 }},
		{"last when it is not a known worker", []string{"a", "b"}, "a", func(n int) bool { return n == 3 }},
		{"alone", []string{self}, "x", func(n int) bool { return n == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newHarness(t, 1, true).p.prod
			pr.setPeers(tc.peers)
			got := pr.rank(tc.by, "0b7e3c2a-5f1d-4d8e-9a6b-3c2d1e0f9a8b")
			assert.True(t, tc.want(got), "rank %d", got)
		})
	}
	// Every worker computes the same first one for a job nobody among them added.
	firsts := map[int]bool{}
	for _, me := range peers {
		h := newHarness(t, 1, true)
		h.p.cfg.QueueID = me
		h.p.prod.setPeers(peers)
		firsts[(indexOf(peers, me)-h.p.prod.rank("node", "some-job")+len(peers))%len(peers)] = true
	}
	assert.Len(t, firsts, 1, "one queue goes first for a job")
}

func TestRoundsThatLoseEveryClaimBackOff(t *testing.T) {
	h := newHarness(t, 2, false)
	for range 4 {
		h.store.add(job.Normal, time.Now().Add(-time.Second))
	}
	h.store.takenElsewhere = true
	first := h.p.prod.round()
	second := h.p.prod.round()
	assert.Positive(t, first, "aim again after a pause, not at once")
	assert.LessOrEqual(t, first, time.Millisecond)
	assert.Greater(t, h.p.prod.contended, time.Millisecond, "the pause grows while every claim loses: %v", second)
	h.store.takenElsewhere = false
	h.p.prod.round()
	assert.Len(t, h.of(EventActive), 2, "a round that wins claims at once")
	assert.Zero(t, h.p.prod.contended)
}

func TestADocumentThatCannotBeProcessedIsReportedOnceAndLeftOut(t *testing.T) {
	h := newHarness(t, 2, false)
	bad := rdb.Candidate{ID: 42.0, Err: fmt.Errorf("%w: field \"timeout\" is string", job.ErrInvalidDocument)}
	h.store.bad = []rdb.Candidate{bad}
	good := h.store.add(job.Normal, time.Now().Add(-time.Second))

	h.p.prod.round()
	h.finishAll(t)
	h.p.prod.wake(true)
	h.p.prod.round()

	assert.Equal(t, []string{"42"}, h.of(EventError), "reported once, by id")
	assert.Equal(t, []string{good.ID}, h.of(EventActive), "the good job is not held back")
	require.Len(t, h.store.skips, 2)
	assert.Equal(t, []any{42.0}, h.store.skips[1], "left out of the next reads")
}

func TestAStaleHintMakesTheNextRoundRead(t *testing.T) {
	h := newHarness(t, 2, true)
	h.p.prod.round() // idle
	j := h.store.add(job.Normal, time.Now().Add(-time.Second))
	stale := *j
	stale.ProcessCount = 7 // the hint saw another version of the job
	h.p.Hint(&stale, self)
	h.p.prod.round()
	assert.Empty(t, h.of(EventActive))
	h.p.prod.round()
	reads, _ := h.store.counts()
	assert.Equal(t, 2, reads, "the table says what is due after a hint went stale")
	assert.Equal(t, []string{j.ID}, h.of(EventActive))
}

// bufferedHarness is a producer at concurrency 1 that has claimed one of six due jobs of
// one priority and holds three more in its buffer.
func bufferedHarness(t *testing.T, feed bool) *harness {
	t.Helper()
	h := newHarness(t, 1, feed)
	past := time.Now().Add(-time.Second)
	for range 6 {
		h.store.add(job.Low, past)
	}
	h.p.prod.round()
	require.Len(t, h.p.prod.buf, 3, "a read of 4 × the concurrency: one claimed, three ahead")
	return h
}

// A busy producer that follows the changefeed claims from what it read ahead for
// feedBufferAge rather than bufferAge: its hints bring a job added meanwhile into the
// claims' order, so a job of a higher priority still goes first. Without the feed, once
// the buffer is bufferAge old, a look at the head finds that job, and it reads the table
// again (see TestWithoutAFeedALookAtTheHeadKeepsAnOldBuffer).
func TestWithAFeedTheBufferLastsLongerAndHintsGoFirst(t *testing.T) {
	for _, feed := range []bool{false, true} {
		t.Run(fmt.Sprintf("feed %v", feed), func(t *testing.T) {
			h := bufferedHarness(t, feed)
			h.finishAll(t)

			p := h.p.prod
			p.mu.Lock()
			p.bufAt = time.Now().Add(-(bufferAge + feedBufferAge) / 2)
			p.headAt = p.bufAt // the look that went with the claim is as old
			p.mu.Unlock()
			high := h.store.add(job.High, time.Now().Add(-time.Millisecond))
			h.p.Hint(high, self)
			h.p.prod.round()

			active := h.of(EventActive)
			require.Len(t, active, 2)
			assert.Equal(t, high.ID, active[1], "the higher priority goes first")
			reads, _ := h.store.counts()
			if feed {
				assert.Equal(t, 1, reads, "from the buffer and the hint, without a read")
			} else {
				assert.Equal(t, 2, reads, "the buffer is too old: the table again")
			}
		})
	}
}

// Without the feed, a buffer older than bufferAge is kept when the head of the table holds
// no job of a higher priority than the buffer's first, and read again otherwise, or once
// it is feedBufferAge old. The look at the head that went with the last claim tells, while
// it is younger than bufferAge; else a look of its own (not a read).
func TestWithoutAFeedALookAtTheHeadKeepsAnOldBuffer(t *testing.T) {
	old := (bufferAge + feedBufferAge) / 2
	for _, tc := range []struct {
		name string
		// age is the buffer's, claimLook that of the look that went with the last claim.
		age, claimLook time.Duration
		// higher adds a job of a higher priority before the round; seen makes the
		// claim's look have seen it.
		higher, seen     bool
		wantReads, heads int
	}{
		{name: "nothing higher: claimed from the buffer", age: old, claimLook: old, wantReads: 1, heads: 1},
		{name: "a higher priority came: the table again", age: old, claimLook: old, higher: true, wantReads: 2, heads: 1},
		{name: "older than feedBufferAge: the table again, without a look", age: feedBufferAge + time.Second, claimLook: old, wantReads: 2},
		{name: "younger than bufferAge: the buffer, without a look", age: bufferAge / 2, claimLook: bufferAge / 2, wantReads: 1},
		{name: "the claim's look is fresh: the buffer, without a look", age: old, claimLook: bufferAge / 2, wantReads: 1},
		{name: "the claim's look saw a higher priority: the table again, without a look", age: old, claimLook: bufferAge / 2, higher: true, seen: true, wantReads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := bufferedHarness(t, false)
			next := h.p.prod.buf[0].ID
			h.finishAll(t)
			h.store.mu.Lock()
			assert.Equal(t, 1, h.store.claimLooks, "the claim that left jobs in the buffer looked at the head")
			h.store.mu.Unlock()

			p := h.p.prod
			p.mu.Lock()
			p.bufAt, p.headAt = time.Now().Add(-tc.age), time.Now().Add(-tc.claimLook)
			p.mu.Unlock()
			var high *job.Job
			if tc.higher {
				high = h.store.add(job.High, time.Now().Add(-time.Millisecond))
			}
			if tc.seen {
				p.mu.Lock()
				p.head = rdb.Head{Priority: float64(job.High), OK: true}
				p.mu.Unlock()
			}
			h.p.prod.round()

			active := h.of(EventActive)
			require.Len(t, active, 2)
			if tc.higher {
				assert.Equal(t, high.ID, active[1], "the higher priority goes first")
			} else {
				assert.Equal(t, next, active[1], "the buffer's next job")
			}
			reads, _ := h.store.counts()
			assert.Equal(t, tc.wantReads, reads)
			h.store.mu.Lock()
			assert.Equal(t, tc.heads, h.store.heads, "looks at the head")
			h.store.mu.Unlock()
		})
	}
}

// Without the feed, a claim that leaves jobs in the buffer looks at the head with it only
// when the next claim, up to twice as far off as this one from the last, may find the
// buffer older than bufferAge: a worker that empties its buffer well within it never pays
// for the look.
func TestTheClaimLooksAtTheHeadOnlyWhenTheNextClaimWouldNeedIt(t *testing.T) {
	h := bufferedHarness(t, false)
	looks := func() int {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		return h.store.claimLooks
	}
	require.Equal(t, 1, looks(), "the first claim: no claim before it to go by")
	p := h.p.prod

	h.finishAll(t)
	h.p.prod.round()
	require.Len(t, h.of(EventActive), 2)
	assert.Equal(t, 1, looks(), "claims close together, from a fresh buffer: no look")

	h.finishAll(t)
	p.mu.Lock()
	p.bufAt, p.lastClaim = time.Now().Add(-bufferAge/2), time.Now().Add(-bufferAge/4)
	p.mu.Unlock()
	h.p.prod.round()
	require.Len(t, h.of(EventActive), 3)
	assert.Equal(t, 2, looks(), "the next claim as far off would find the buffer too old: a look")
	reads, _ := h.store.counts()
	assert.Equal(t, 1, reads, "all three from the first read")
}

// A worker of several whose part read comes back short reads the whole head, unless the
// part read's window held the whole index: at the end of a backlog, that read already
// found every due job of every part.
func TestAShortPartReadThatSawTheWholeIndexIsNotReadAgain(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole %v", whole), func(t *testing.T) {
			h := newHarness(t, 4, false)
			h.p.prod.setPeers([]string{self, "host:db:q:2:other"})
			h.store.wholeParts = whole
			past := time.Now().Add(-time.Second)
			a, b := h.store.add(job.High, past), h.store.add(job.Normal, past)

			h.p.prod.round()

			assert.Equal(t, []string{a.ID, b.ID}, h.of(EventActive))
			reads, _ := h.store.counts()
			assert.Equal(t, 2-b2i(whole), reads)
			h.p.prod.mu.Lock()
			defer h.p.prod.mu.Unlock()
			assert.True(t, h.p.prod.idle, "the table holds no more due jobs")
		})
	}
}

// A worker whose part read filled its free slots with jobs of one priority reads that
// priority's due jobs next (rdb.Skip.DuePriority); after a read that found several
// priorities, or too few jobs, it reads the window again.
func TestAFullPartReadOfOnePriorityReadsItsDueRangeNext(t *testing.T) {
	h := newHarness(t, 2, false)
	h.p.prod.setPeers([]string{self, "host:db:q:2:other"})
	past := time.Now().Add(-time.Second)
	for range 3 {
		h.store.add(job.Normal, past)
	}
	read := func() {
		t.Helper()
		_, _, _, err := h.p.prod.read(context.Background(), time.Now(), 2, holdBack{})
		require.NoError(t, err)
	}
	dues := func() []any {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		out := make([]any, len(h.store.duePriorities))
		for i, p := range h.store.duePriorities {
			if p != nil {
				out[i] = *p
			}
		}
		return out
	}
	normal := float64(job.Normal)

	read() // full, of Normal alone
	read() // full again
	h.store.add(job.High, past)
	read() // full, of High and Normal
	read()
	assert.Equal(t, []any{nil, normal, normal, nil}, dues())

	h.store.mu.Lock()
	for id, j := range h.store.jobs {
		if j.Priority == job.High {
			delete(h.store.jobs, id)
		}
	}
	h.store.mu.Unlock()
	read() // Normal alone again
	h.store.mu.Lock()
	for id := range h.store.jobs {
		if len(h.store.jobs) > 1 {
			delete(h.store.jobs, id)
		}
	}
	h.store.mu.Unlock()
	read() // the due range, and short: a read of the whole head follows
	read() // the window, short again: the whole head again
	assert.Equal(t, []any{nil, normal, normal, nil, nil, normal, nil, nil, nil}, dues())
}

func TestBufferFresh(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name            string
		readAt, checked time.Time
		want            bool
	}{
		{"read within bufferAge", ago(bufferAge / 2), time.Time{}, true},
		{"read before bufferAge, never looked at", ago(bufferAge), time.Time{}, false},
		{"looked at within bufferAge", ago(bufferAge * 2), ago(bufferAge / 2), true},
		{"looked at before bufferAge", ago(bufferAge * 2), ago(bufferAge), false},
		{"looked at lately, but read feedBufferAge ago", ago(feedBufferAge), ago(time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, bufferFresh(now, tc.readAt, tc.checked, bufferAge))
		})
	}
}

func TestPrefetchFollowsWhatTheBufferWasUsedFor(t *testing.T) {
	jobs := func(n int) []*job.Job { return make([]*job.Job, n) }
	for _, tc := range []struct {
		name        string
		concurrency int
		ahead       int
		bufRead     int
		left        int
		dropped     bool
		free        int
		want        int
	}{
		{name: "the first read takes 4 × the concurrency", concurrency: 50, ahead: -1, free: 50, want: 200},
		{name: "a buffer left unused: the free slots only", concurrency: 50, ahead: 150, bufRead: 150, left: 150, free: 50, want: 50},
		{name: "a buffer partly used: what was used, and half again", concurrency: 50, ahead: 150, bufRead: 150, left: 50, free: 50, want: 200},
		{name: "a buffer that ran dry: twice as many", concurrency: 50, ahead: 40, bufRead: 40, free: 20, want: 100},
		{name: "twice as many, up to 4 × the concurrency", concurrency: 50, ahead: 150, bufRead: 150, free: 50, want: 200},
		{name: "a buffer emptied by a missed claim says nothing", concurrency: 50, ahead: 30, bufRead: 100, dropped: true, free: 50, want: 80},
		{name: "never more than maxPrefetch", concurrency: 2000, ahead: -1, free: 500, want: maxPrefetch},
		{name: "but always the free slots", concurrency: 2000, ahead: -1, free: 2000, want: 2000},
		{name: "at least the free slots", concurrency: 10, ahead: 0, bufRead: 10, left: 10, free: 10, want: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newHarness(t, tc.concurrency, false).p.prod
			p.ahead, p.bufRead, p.buf, p.bufDropped = tc.ahead, tc.bufRead, jobs(tc.left), tc.dropped
			assert.Equal(t, tc.want, p.prefetch(tc.free))
		})
	}
}

// A lease never has less than Heartbeat/2 + 1 s left: beats every Heartbeat/4 renew the
// runs older than a beat, so a run waits at most two beats for its renewal.
func TestLeastLeaseLeft(t *testing.T) {
	for _, tc := range []struct{ heartbeat, lease, least time.Duration }{
		{10 * time.Second, 11 * time.Second, 6 * time.Second},
		{2 * time.Second, 3 * time.Second, 2 * time.Second},
		{time.Minute, 61 * time.Second, 31 * time.Second},
	} {
		assert.Equal(t, tc.lease, HeartbeatLease(tc.heartbeat))
		assert.Equal(t, tc.least, LeastLeaseLeft(tc.heartbeat))
		assert.Equal(t, tc.heartbeat/4, renewPeriod(tc.heartbeat))
	}
}

// A claim that the server runs after the queue gave it up is found by a later look and
// its job run once, even when the queue claimed the job again meanwhile and gave that
// claim up too (the job's id was then twice among those to look for).
func TestAClaimThatLandsLateRunsItsJobOnce(t *testing.T) {
	h := newHarness(t, 2, false)
	j := h.store.add(job.Normal, time.Now().Add(-time.Second))
	h.store.holdClaims = 2
	h.p.prod.round() // claim 1, given up
	h.p.prod.round() // looks for it (not there yet), reads, claim 2, given up
	assert.Empty(t, h.of(EventActive))
	h.store.land(0)
	h.p.prod.laterAt = time.Now() // the look-again is due
	h.p.prod.round()
	assert.Equal(t, []string{j.ID}, h.of(EventActive), "run once")
	assert.Equal(t, job.Active, h.store.status(j.ID))
}
