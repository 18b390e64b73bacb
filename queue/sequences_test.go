package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// ledger records, inside the handlers, the runs of each sequence: the order its jobs
// started in, the most running at once, and which started before the one ahead of them
// in the sequence had completed.
type ledger struct {
	mu       sync.Mutex
	running  map[string]int
	most     map[string]int
	started  map[string][]int // by key: the place of each run's job, in start order
	done     map[string]map[int]bool
	early    []string
	failOnce map[string]bool // job ids whose first run fails
	failed   map[string]bool
	wide     int // the most runs of any key at once
	now      int
}

func newLedger() *ledger {
	return &ledger{running: map[string]int{}, most: map[string]int{}, started: map[string][]int{},
		done: map[string]map[int]bool{}, failOnce: map[string]bool{}, failed: map[string]bool{}}
}

type step struct {
	Key   string `json:"key"`
	Place int    `json:"place"`
}

func (l *ledger) handler(ctx context.Context, j *job.Job) (any, error) {
	var s step
	if err := j.DataAs(&s); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.running[s.Key]++
	l.now++
	l.wide = max(l.wide, l.now)
	l.most[s.Key] = max(l.most[s.Key], l.running[s.Key])
	l.started[s.Key] = append(l.started[s.Key], s.Place)
	if s.Place > 0 && !l.done[s.Key][s.Place-1] {
		l.early = append(l.early, fmt.Sprintf("%s/%d started before %d completed", s.Key, s.Place, s.Place-1))
	}
	fail := l.failOnce[j.ID] && !l.failed[j.ID]
	l.failed[j.ID] = l.failed[j.ID] || fail
	l.mu.Unlock()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[s.Key]--
	l.now--
	if fail {
		return nil, errors.New("fails once")
	}
	if l.done[s.Key] == nil {
		l.done[s.Key] = map[int]bool{}
	}
	l.done[s.Key][s.Place] = true
	return nil, nil
}

// The jobs of a sequence run one at a time, in the order they were added, across three
// processing queues (worker processes), and a job that fails and is retried keeps the
// jobs behind it waiting until it completes; different sequences run side by side.
func TestSequencesRunInOrderOneAtATime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 6})
	ctx := testContext(t)
	const keys, each = 6, 8
	l := newLedger()
	var all []*job.Job
	var calls [2][]*job.Job // two AddJob calls: the first half of every key, then the rest
	for place := range each {
		for k := range keys {
			key := fmt.Sprintf("account-%d", k)
			j := f.q.CreateJob(step{Key: key, Place: place}).SetSequence(key).SetRetryDelay(50 * time.Millisecond)
			if place == 2 || place == 5 && k%2 == 0 {
				l.failOnce[j.ID] = true
			}
			all = append(all, j)
			calls[place*2/each] = append(calls[place*2/each], j)
		}
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(l.handler))
	for range 2 {
		require.NoError(t, newQueue(t, f, &queue.Options{Concurrency: 6, MasterInterval: -1}).Process(l.handler))
	}
	for _, call := range calls {
		_, err := f.q.AddJob(ctx, call...)
		require.NoError(t, err)
	}
	waitForAll(t, events, queue.EventCompleted, all...)

	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early, "no job starts before the one ahead of it completed")
	for k := range keys {
		key := fmt.Sprintf("account-%d", k)
		assert.Equal(t, 1, l.most[key], "%s: one at a time", key)
		var want []int
		for place := range each {
			want = append(want, place)
			if place == 2 || place == 5 && k%2 == 0 {
				want = append(want, place) // its retry, before the next
			}
		}
		assert.Equal(t, want, l.started[key], "%s: in the order added", key)
	}
	assert.Greater(t, l.wide, 1, "sequences run side by side")
	for _, j := range all {
		got := f.get(t, j.ID)
		assert.Equal(t, job.Completed, got.Status)
	}
}

// Cancelling the job at the head of a sequence lets the next one run; a job of a
// sequence added later than a running one waits for it, even on a queue that is idle.
func TestACancelledJobGivesItsSequenceToTheNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	first := f.q.CreateJob(step{Key: "doc", Place: 0}).SetSequence("doc").SetDateEnable(time.Now().Add(time.Hour))
	second := f.q.CreateJob(step{Key: "doc", Place: 1}).SetSequence("doc")
	other := f.q.CreateJob(step{Key: "other", Place: 0}).SetSequence("other")
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventActive)
	l := newLedger()
	require.NoError(t, f.q.Process(l.handler))
	_, err := f.q.AddJob(ctx, first, second, other)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, other)
	assert.Equal(t, job.Waiting, f.get(t, second.ID).Status, "the first of its sequence is not done")

	_, err = f.q.CancelJob(ctx, "no longer wanted", first.ID)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, second)
}

// Bad input gets a clear error at the call, and nothing is written.
func TestSequenceBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for _, key := range []string{"", string(make([]byte, job.MaxSequenceLen+1)), "\xff"} {
		j := f.q.CreateJob(1).SetSequence(key)
		_, err := f.q.AddJob(ctx, j)
		require.ErrorIs(t, err, job.ErrInvalidSequence, "%q", key)
		require.ErrorIs(t, err, job.ErrInvalid)
		assert.Nil(t, f.rawDoc(t, j.ID))
	}
}

// Sequences counts each sequence's unfinished jobs and names the one that holds it: a
// running job, or a failed one waiting out its retry delay ahead of the rest.
func TestSequencesSayWhatHoldsEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	none, partial, err := f.q.Sequences(ctx)
	require.NoError(t, err, "a table where no job of a sequence was ever added")
	assert.Empty(t, none)
	assert.False(t, partial)

	failing := f.q.CreateJob("fail").SetSequence("doc").SetRetryMax(1).SetRetryDelay(time.Hour)
	running := f.q.CreateJob("block").SetSequence("ledger")
	jobs := []*job.Job{failing, f.q.CreateJob("doc 1").SetSequence("doc"), f.q.CreateJob("doc 2").SetSequence("doc"),
		running, f.q.CreateJob("ledger 1").SetSequence("ledger"), f.q.CreateJob("block")}
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	release := make(chan struct{})
	defer close(release)
	events := f.q.Events(ctx, queue.EventFailed)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Data == "fail" {
			return nil, errors.New("fails, to be retried in an hour")
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	waitForAll(t, events, queue.EventFailed, failing)
	want := []queue.SequenceStat{
		{Sequence: "doc", Waiting: 2, Failed: 1, Head: failing.ID, HeadStatus: job.Failed},
		{Sequence: "ledger", Waiting: 1, Active: 1, Head: running.ID, HeadStatus: job.Active},
	}
	var got []queue.SequenceStat
	require.Eventually(t, func() bool {
		got, partial, err = f.q.Sequences(ctx)
		return err == nil && !partial && assert.ObjectsAreEqual(want, got)
	}, 10*time.Second, 50*time.Millisecond, "last read: %+v, %v", got, err)
}

// Each job of a sequence is stamped with the job that was last in it when it was added,
// across AddJob calls; a stamp the caller wrote is replaced. Cancelling a job in the middle
// does not let the one behind it pass a job ahead that failed and will be retried.
func TestAJobCancelledInTheMiddleLetsNoneBehindItPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	l := newLedger()
	first := f.q.CreateJob(step{Key: "doc", Place: 0}).SetSequence("doc").SetRetryDelay(500 * time.Millisecond)
	l.failOnce[first.ID] = true
	middle := f.q.CreateJob(step{Key: "doc", Place: 1}).SetSequence("doc")
	_, err := f.q.AddJob(ctx, first, middle)
	require.NoError(t, err)
	last := f.q.CreateJob(step{Key: "doc", Place: 2}).SetSequence("doc")
	last.Fields["rjqSequencePrev"] = "" // "nothing ahead of me": a caller's word is not taken
	_, err = f.q.AddJob(ctx, last)
	require.NoError(t, err)
	assert.Equal(t, "", f.rawDoc(t, first.ID)["rjqSequencePrev"])
	assert.Equal(t, first.ID, f.rawDoc(t, middle.ID)["rjqSequencePrev"])
	assert.Equal(t, middle.ID, f.rawDoc(t, last.ID)["rjqSequencePrev"], "the last of the sequence when it was added, from another call")

	events := f.q.Events(ctx, queue.EventFailed, queue.EventCompleted)
	require.NoError(t, f.q.Process(l.handler))
	waitForAll(t, events, queue.EventFailed, first)
	_, err = f.q.CancelJob(ctx, "no longer wanted", middle.ID)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, first, last)

	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, []int{0, 0, 2}, l.started["doc"], "the last starts after the first's retry, not during its delay")
	assert.Equal(t, 1, l.most["doc"])
}

// A job of a sequence without the stamp of the job ahead (added by an earlier version of
// this library) still waits for its turn, read from the index.
func TestJobsWithoutTheStampKeepTheirOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	l := newLedger()
	var jobs []*job.Job
	for place := range 4 {
		j := f.q.CreateJob(step{Key: "old", Place: place}).SetSequence("old").SetRetryDelay(200 * time.Millisecond)
		if place == 1 {
			l.failOnce[j.ID] = true
		}
		jobs = append(jobs, j)
	}
	_, err := f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	_, err = f.table().Replace(func(doc r.Term) any { return doc.Without("rjqSequencePrev") }).RunWrite(f.raw)
	require.NoError(t, err)
	assert.NotContains(t, f.rawDoc(t, jobs[3].ID), "rjqSequencePrev")

	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(l.handler))
	waitForAll(t, events, queue.EventCompleted, jobs...)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early)
	assert.Equal(t, []int{0, 1, 1, 2, 3}, l.started["old"])
	assert.Equal(t, 1, l.most["old"])
}

// The jobs of a key never share a millisecond of dateEnable: each goes at least a
// millisecond after the one ahead that waits, in one add or across adds, so that the claim
// order holds the first jobs of every key before the second of any; a job of another key
// is not moved, nor a delayed one.
func TestTheJobsOfASequenceArePlacedAfterTheOneAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	k := []*job.Job{f.q.CreateJob(0).SetSequence("k"), f.q.CreateJob(1).SetSequence("k"), f.q.CreateJob(2).SetSequence("k")}
	other := f.q.CreateJob("m").SetSequence("m")
	otherAt := other.DateEnable
	_, err := f.q.AddJob(ctx, k[0], other, k[1], k[2])
	require.NoError(t, err)
	assert.True(t, other.DateEnable.Equal(otherAt), "the first of a key keeps its time")
	for i := 1; i < len(k); i++ {
		assert.GreaterOrEqual(t, k[i].DateEnable.Sub(k[i-1].DateEnable), time.Millisecond, "job %d", i)
	}
	later := f.q.CreateJob(3).SetSequence("k")
	_, err = f.q.AddJob(ctx, later)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, later.DateEnable.Sub(k[2].DateEnable), time.Millisecond, "after the key's last, which waits")
	delayedAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	delayed := f.q.CreateJob(4).SetSequence("k").SetDateEnable(delayedAt)
	_, err = f.q.AddJob(ctx, delayed)
	require.NoError(t, err)
	assert.True(t, delayed.DateEnable.Equal(delayedAt), "a delayed job keeps its time")
}
