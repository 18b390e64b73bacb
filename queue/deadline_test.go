package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// deadlineFixture is a queue of concurrency 1 whose handler holds its one slot until
// release is closed, and records the jobs it started.
type deadlineFixture struct {
	fixture
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	started []string
}

func newDeadlineFixture(t *testing.T, opts *queue.Options) *deadlineFixture {
	f := &deadlineFixture{fixture: newFixture(t, opts), release: make(chan struct{})}
	t.Cleanup(f.free)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		f.mu.Lock()
		f.started = append(f.started, j.ID)
		f.mu.Unlock()
		select {
		case <-f.release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	return f
}

// cancelledForItsDeadline waits for the cancelled event of the job id, whose deadline
// was deadline, and checks that it came for that reason, within about a second of the
// deadline and not before, and that the job never started.
func (f *deadlineFixture) cancelledForItsDeadline(t *testing.T, events <-chan queue.Event, id string, deadline time.Time) {
	t.Helper()
	e := waitFor(t, events, queue.EventCancelled, id)
	took := time.Since(deadline)
	t.Logf("cancelled %v after its deadline", took.Round(time.Millisecond))
	assert.Equal(t, job.MessageDeadlinePassed, e.Reason)
	assert.GreaterOrEqual(t, took, time.Duration(0), "not before the deadline")
	// Within about a second: the Master looks every second. reqlite under -race on a
	// loaded CI machine answers slowly; it gets more slack.
	limit := 2 * time.Second
	if f.srv.IsReqlite() {
		limit = 5 * time.Second
	}
	assert.Less(t, took, limit, "within about a second of the deadline")
	got := f.get(t, id)
	assert.Equal(t, job.Cancelled, got.Status)
	assert.Equal(t, job.MessageDeadlinePassed, got.GetLastLog().Message)
	assert.Zero(t, got.ProcessCount, "it never started")
}

// free lets every run end.
func (f *deadlineFixture) free() { f.once.Do(func() { close(f.release) }) }

func (f *deadlineFixture) ran(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.started {
		if s == id {
			return true
		}
	}
	return false
}

// A job whose deadline passes while every slot is taken never starts: the Queue Master
// cancels it with the reason "deadline passed" within about a second, on this queue and
// on the others of the table.
//
// The table's first job with a deadline brings the index the Master reads them through:
// the Master hears of it at once whether its own queue added the job or another one (in
// another process: a web process that adds, say) did.
func TestADeadlinePassedWhileWaitingCancelsTheJob(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"the Master's queue", "another queue"} {
		t.Run("added by "+by, func(t *testing.T) {
			t.Parallel()
			testDeadlinePassedWhileWaiting(t, by == "another queue")
		})
	}
}

func testDeadlinePassedWhileWaiting(t *testing.T, elsewhere bool) {
	f := newDeadlineFixture(t, &queue.Options{Concurrency: 1})
	ctx := testContext(t)
	watcher := newQueue(t, f.fixture, &queue.Options{MasterInterval: -1})
	heard := watcher.Events(ctx, queue.EventCancelled)
	events := f.q.Events(ctx, queue.EventActive, queue.EventCancelled)
	busy, err := f.q.AddJob(ctx, f.q.CreateJob("busy"))
	require.NoError(t, err)
	waitForAll(t, events, queue.EventActive, busy...)
	adder := f.q
	if elsewhere {
		adder = watcher
	}

	deadline := time.Now().Add(1500 * time.Millisecond)
	late, err := adder.AddJob(ctx, adder.CreateJob("late").SetDeadline(deadline))
	require.NoError(t, err)
	f.cancelledForItsDeadline(t, events, late[0].ID, deadline)
	assert.Equal(t, job.MessageDeadlinePassed, waitFor(t, heard, queue.EventCancelled, late[0].ID).Reason, "other queues hear the reason")

	f.free()
	assert.False(t, f.ran(late[0].ID))
}

// A job whose deadline passes while its group is full (its one slot held by a running job
// of the group), on a queue with free slots, never starts: the Queue Master cancels it
// within about a second of the deadline, and other groups' jobs run meanwhile.
func TestADeadlinePassedWhileItsGroupIsFullCancelsTheJob(t *testing.T) {
	t.Parallel()
	f := newDeadlineFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "acme", 1))
	events := f.q.Events(ctx, queue.EventActive, queue.EventCancelled)
	busy, err := f.q.AddJob(ctx, f.q.CreateJob("busy").SetGroup("acme"))
	require.NoError(t, err)
	waitForAll(t, events, queue.EventActive, busy...)

	deadline := time.Now().Add(1500 * time.Millisecond)
	late, err := f.q.AddJob(ctx, f.q.CreateJob("late").SetGroup("acme").SetDeadline(deadline))
	require.NoError(t, err)
	other, err := f.q.AddJob(ctx, f.q.CreateJob("other").SetGroup("zeta"))
	require.NoError(t, err)
	waitForAll(t, events, queue.EventActive, other...)
	assert.False(t, f.ran(late[0].ID), "its group is full")

	f.cancelledForItsDeadline(t, events, late[0].ID, deadline)

	f.free()
	assert.False(t, f.ran(late[0].ID))
}

// With no Queue Master at all, a worker that reads a job after its deadline cancels it
// rather than run it, and runs the jobs behind it.
func TestAWorkerCancelsAJobPastItsDeadlineRatherThanRunIt(t *testing.T) {
	t.Parallel()
	f := newDeadlineFixture(t, &queue.Options{Concurrency: 1, MasterInterval: -1})
	ctx := testContext(t)
	events := f.q.Events(ctx, queue.EventActive, queue.EventCancelled)
	busy, err := f.q.AddJob(ctx, f.q.CreateJob("busy"))
	require.NoError(t, err)
	waitForAll(t, events, queue.EventActive, busy...)

	deadline := time.Now().Add(300 * time.Millisecond)
	late, err := f.q.AddJob(ctx, f.q.CreateJob("late").SetDeadline(deadline).SetPriority(job.Highest))
	require.NoError(t, err)
	next, err := f.q.AddJob(ctx, f.q.CreateJob("next"))
	require.NoError(t, err)
	<-time.After(time.Until(deadline)) // the slot frees only once the deadline has passed
	f.free()
	var reason string
	deadlineAt := time.After(15 * time.Second)
	for ranNext := false; reason == "" || !ranNext; {
		select {
		case e := <-events:
			t.Logf("%s %s %q", e.Type, e.JobID, e.Reason)
			switch {
			case e.Type == queue.EventCancelled && e.JobID == late[0].ID:
				reason = e.Reason
			case e.Type == queue.EventActive && e.JobID == next[0].ID:
				ranNext = true
			}
		case <-deadlineAt:
			t.Fatalf("cancelled with %q, next ran: %v", reason, f.ran(next[0].ID))
		}
	}
	assert.Equal(t, job.MessageDeadlinePassed, reason)
	assert.False(t, f.ran(late[0].ID), "the late job never ran")
	assert.Equal(t, job.Cancelled, f.get(t, late[0].ID).Status)
}

// A deadline in the past, or one that passed between SetDeadline and AddJob, is refused
// and nothing is written.
func TestDeadlineBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	_, err := f.q.AddJob(ctx, f.q.CreateJob(nil), f.q.CreateJob(nil).SetDeadline(time.Now().Add(-time.Second)))
	assert.ErrorIs(t, err, job.ErrInvalidDeadline)
	_, err = f.q.AddJob(ctx, f.q.CreateJob(nil), f.q.CreateJob(nil).SetDeadline(time.Time{}))
	assert.ErrorIs(t, err, job.ErrInvalidDeadline)
	soon := f.q.CreateJob(nil).SetDeadline(time.Now().Add(20 * time.Millisecond))
	<-time.After(30 * time.Millisecond)
	_, err = f.q.AddJob(ctx, f.q.CreateJob(nil), soon)
	assert.ErrorIs(t, err, job.ErrInvalidDeadline)
	assert.Zero(t, f.count(t))
}

// A deadline the job could never meet is refused at AddJob, saying so, and nothing is
// written: one at or before the job's dateEnable (set by hand past SetDeadline's check),
// one its debounce moves the start past; a past one's error shows the time in RFC 3339,
// without Go's monotonic clock.
func TestADeadlineTheJobCouldNeverMeetWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	now := time.Now()
	err := f.q.CreateJob(nil).SetDateEnable(now.Add(time.Hour)).SetDeadline(now.Add(time.Minute)).Err()
	require.ErrorIs(t, err, job.ErrInvalidDeadline)
	assert.Contains(t, err.Error(), "could never start")

	byHand := f.q.CreateJob(nil).SetDeadline(now.Add(time.Minute))
	byHand.DateEnable = now.Add(time.Hour)
	debounced := f.q.CreateJob(nil).SetUniqueKey("d").SetDebounce(time.Hour).SetDeadline(now.Add(time.Minute))
	require.NoError(t, debounced.Err())
	past := f.q.CreateJob(nil)
	past.Fields = map[string]any{"rjqDeadline": now.Add(-time.Minute)}
	for _, j := range []*job.Job{byHand, debounced, past} {
		_, err = f.q.AddJob(ctx, f.q.CreateJob(nil), j)
		require.ErrorIs(t, err, job.ErrInvalidDeadline)
		assert.NotContains(t, err.Error(), "m=")
		if j != past {
			assert.Contains(t, err.Error(), "could never start")
		}
	}
	assert.Zero(t, f.count(t))
}

// A Master that has looked for the index of start deadlines and not found it looks again
// a minute later, unless its changefeed shows it a job with a deadline: then at its next
// tick, so that the table's first such job, added by another process, is cancelled on
// time too.
func TestTheMasterHearsOfTheFirstDeadlineAddedElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	require.NoError(t, queue.ExpireDue(ctx, f.q), "no index yet: nothing to read")
	added := f.q.Events(ctx, queue.EventAdded)
	other := newQueue(t, f, &queue.Options{MasterInterval: -1})
	late, err := other.AddJob(ctx, other.CreateJob("late").SetDeadline(time.Now().Add(300*time.Millisecond)))
	require.NoError(t, err)
	waitFor(t, added, queue.EventAdded, late[0].ID)

	until := time.Now().Add(10 * time.Second)
	for f.get(t, late[0].ID).Status != job.Cancelled {
		require.True(t, time.Now().Before(until), "the expiry did not cancel the job within 10 s of hearing of it")
		require.NoError(t, queue.ExpireDue(ctx, f.q))
		<-time.After(50 * time.Millisecond) // the next tick
	}
	assert.Equal(t, job.MessageDeadlinePassed, f.get(t, late[0].ID).GetLastLog().Message)
}
