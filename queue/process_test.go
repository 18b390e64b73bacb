package queue_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// waitFor returns the first event of type typ for job id (any job when id is empty),
// failing the test after a deadline.
func waitFor(t *testing.T, events <-chan queue.Event, typ queue.EventType, id string) queue.Event {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e, ok := <-events:
			require.True(t, ok, "events closed while waiting for %s", typ)
			if e.Type == typ && (id == "" || e.JobID == id) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event for job %q", typ, id)
		}
	}
}

// waitForAll waits for an event of type typ for each of the jobs, in any order.
func waitForAll(t *testing.T, events <-chan queue.Event, typ queue.EventType, jobs ...*job.Job) {
	t.Helper()
	want := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		want[j.ID] = true
	}
	deadline := time.After(15 * time.Second)
	for len(want) > 0 {
		select {
		case e, ok := <-events:
			require.True(t, ok, "events closed while waiting for %s", typ)
			if e.Type == typ {
				delete(want, e.JobID)
			}
		case <-deadline:
			t.Fatalf("no %s event for jobs %v", typ, want)
		}
	}
}

func messages(log []job.LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Message
	}
	return out
}

func TestProcessCompletes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	var got atomic.Pointer[job.Job]
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		got.Store(j)
		return map[string]any{"sent": true}, nil
	}))
	assert.ErrorIs(t, f.q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }), queue.ErrProcessTwice)

	waitFor(t, events, queue.EventActive, j.ID)
	waitFor(t, events, queue.EventProcessing, j.ID)
	e := waitFor(t, events, queue.EventCompleted, j.ID)
	assert.False(t, e.IsRepeating)
	assert.True(t, e.Local)
	assert.Equal(t, job.Active, got.Load().Status, "the handler gets the claimed job")
	assert.Equal(t, 1, got.Load().ProcessCount)

	done := f.get(t, j.ID)
	assert.Equal(t, job.Completed, done.Status)
	assert.Equal(t, 100.0, done.Progress)
	assert.Equal(t, 1, done.ProcessCount)
	assert.Equal(t, f.q.ID(), done.QueueID)
	within(t, time.Now(), done.DateStarted, 5*time.Second)
	within(t, time.Now(), done.DateFinished, 5*time.Second)
	assert.False(t, done.DateFinished.Before(done.DateStarted))
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive, job.MessageCompleted}, messages(done.Log))
	active := done.Log[1]
	assert.Equal(t, job.Active, active.Status)
	assert.Equal(t, 0, active.ProcessCount, "the active entry carries the count before the claim, as in the original")
	completed := done.Log[2]
	assert.Equal(t, map[string]any{"sent": true}, completed.Data, "the result is the completion entry's data")
	assert.Equal(t, job.Completed, completed.Status)
	assert.Contains(t, f.rawDoc(t, j.ID)["log"].([]any)[2], "duration")
	assert.GreaterOrEqual(t, completed.Duration, time.Duration(0))
}

func TestProcessNilHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	assert.ErrorIs(t, f.q.Process(nil), queue.ErrNilHandler)
}

func TestProcessRetriesThenTerminates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetRetryMax(1).SetRetryDelay(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	var calls atomic.Int32
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		calls.Add(1)
		return nil, errors.New("smtp down")
	}))
	waitFor(t, events, queue.EventFailed, j.ID)
	waitFor(t, events, queue.EventTerminated, j.ID)
	assert.Equal(t, int32(2), calls.Load(), "one run and one retry")

	done := f.get(t, j.ID)
	assert.Equal(t, job.Terminated, done.Status)
	assert.Equal(t, 1, done.RetryCount)
	assert.Equal(t, 2, done.ProcessCount)
	assert.Equal(t, 0.0, done.Progress)
	within(t, time.Now(), done.DateFinished, 5*time.Second)
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive, job.MessageFailed, job.MessageActive, job.MessageFailed}, messages(done.Log))
	retry, final := done.Log[2], done.Log[4]
	assert.Equal(t, job.Warning, retry.Type)
	assert.Equal(t, job.Failed, retry.Status)
	assert.Equal(t, 1, retry.RetryCount)
	assert.Equal(t, "smtp down", retry.ErrorMessage)
	assert.Equal(t, job.MessageNoErrorStack, retry.ErrorStack)
	assert.Equal(t, map[string]any{"name": "errors.errorString", "message": "smtp down"}, retry.Data)
	assert.Equal(t, job.Error, final.Type)
	assert.Equal(t, job.Terminated, final.Status)
	doc := f.rawDoc(t, j.ID)["log"].([]any)[4].(map[string]any)
	for _, k := range []string{"duration", "errorMessage", "errorStack"} {
		assert.Contains(t, doc, k)
	}
}

func TestProcessRetryIsDelayed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetRetryMax(3).SetRetryDelay(time.Hour)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		return nil, errors.New("later")
	}))
	waitFor(t, events, queue.EventFailed, j.ID)
	failed := f.get(t, j.ID)
	assert.Equal(t, job.Failed, failed.Status)
	assert.Equal(t, 1, failed.RetryCount)
	// retryDelay × retryCount after the failure, as the original documents it.
	within(t, time.Now().Add(time.Hour), failed.DateEnable, 5*time.Second)
}

func TestProcessRepeats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t), queue.EventCompleted)
	j := f.q.CreateJob(nil).SetRepeat(2).SetRepeatDelay(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	var calls atomic.Int32
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		calls.Add(1)
		return nil, nil
	}))
	var repeating []bool
	for range 3 {
		repeating = append(repeating, waitFor(t, events, queue.EventCompleted, j.ID).IsRepeating)
	}
	assert.Equal(t, []bool{true, true, false}, repeating, "repeat 2 runs the job 3 times")
	done := f.get(t, j.ID)
	assert.Equal(t, job.Completed, done.Status)
	assert.Equal(t, 3, done.ProcessCount)
	assert.Equal(t, int32(3), calls.Load())
}

func TestProcessRepeatWaitsAfterLastFailedRetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetRepeat(job.RepeatForever).SetRepeatDelay(time.Hour).SetRetryMax(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		return nil, errors.New("boom")
	}))
	waitFor(t, events, queue.EventFailed, j.ID)
	got := f.get(t, j.ID)
	assert.Equal(t, job.Waiting, got.Status, "a repeating job goes back to waiting instead of terminating")
	assert.Equal(t, 0, got.RetryCount)
	within(t, time.Now().Add(time.Hour), got.DateEnable, 5*time.Second)
	assert.Equal(t, job.Error, got.GetLastLog().Type)
}

func TestProcessCancelFromHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	jobs := f.add(t, 2)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Data == float64(0) {
			return nil, job.Cancel("customer left")
		}
		return nil, job.Cancel("")
	}))
	for _, j := range jobs {
		waitFor(t, events, queue.EventCancelled, j.ID)
	}
	first, second := f.get(t, jobs[0].ID), f.get(t, jobs[1].ID)
	assert.Equal(t, job.Cancelled, first.Status)
	assert.Equal(t, "customer left", first.GetLastLog().Message)
	assert.Equal(t, job.MessageCancel, second.GetLastLog().Message)
	require.Eventually(t, func() bool { return f.q.Running() == 0 }, 5*time.Second, 10*time.Millisecond,
		"a cancelled job frees its slot")
}

func TestProcessPassBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	later := time.Now().Add(time.Hour)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		j.Data = "half done"
		j.SetDateEnable(later)
		return j, nil
	}))
	waitFor(t, events, queue.EventUpdated, j.ID)
	got := f.get(t, j.ID)
	assert.Equal(t, job.Waiting, got.Status)
	assert.Equal(t, "half done", got.Data)
	assert.True(t, later.Truncate(time.Millisecond).Equal(got.DateEnable))
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive, job.MessagePassBack, job.MessageUpdated}, messages(got.Log))
}

func TestProcessPanicFailsTheJobOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	bad := f.q.CreateJob("panic").SetRetryMax(0)
	good := f.q.CreateJob("fine")
	_, err := f.q.AddJob(testContext(t), bad, good)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Data == "panic" {
			panic("nil map")
		}
		return "ok", nil
	}))
	waitFor(t, events, queue.EventTerminated, bad.ID)
	waitFor(t, events, queue.EventCompleted, good.ID)
	entry := f.get(t, bad.ID).GetLastLog()
	assert.Equal(t, "handler panicked: nil map", entry.ErrorMessage)
	assert.Contains(t, entry.ErrorStack, "goroutine", "the panic's stack is kept")
}

func TestProcessTimeoutFailsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetTimeout(300 * time.Millisecond).SetRetryMax(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	cause := make(chan error, 1)
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		<-release
		return "too late", nil
	}))
	waitFor(t, events, queue.EventTerminated, j.ID)
	assert.ErrorIs(t, <-cause, job.ErrTimeout)
	got := f.get(t, j.ID)
	assert.Equal(t, job.Terminated, got.Status, "failed when the timeout passed, before the handler returned")
	assert.Equal(t, "Job timed out (run time > 300 ms)", got.GetLastLog().ErrorMessage, "the original's wording")
	close(release)
	require.Eventually(t, func() bool { return f.q.Running() == 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, job.Terminated, f.get(t, j.ID).Status, "the late return changes nothing")
}

func TestProcessProgressRestartsTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.q.CreateJob(nil).SetTimeout(400 * time.Millisecond).SetRetryMax(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for i := 1; i <= 8; i++ { // 800 ms in all, twice the timeout
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			if err := j.UpdateProgress(ctx, float64(i*10)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}))
	waitFor(t, events, queue.EventCompleted, j.ID)
	assert.Equal(t, job.Completed, f.get(t, j.ID).Status)
}

func TestProcessCancelJobCancelsTheHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	cause := make(chan error, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return "finished anyway", nil
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	_, err := f.q.CancelJob(testContext(t), "stop it", j.ID)
	require.NoError(t, err)
	assert.ErrorIs(t, <-cause, job.ErrCancelled)
	require.Eventually(t, func() bool { return f.q.Running() == 0 }, 5*time.Second, 10*time.Millisecond)
	got := f.get(t, j.ID)
	assert.Equal(t, job.Cancelled, got.Status, "the handler's late result is ignored")
	assert.Equal(t, "stop it", got.GetLastLog().Message)
}

func TestProcessRemovesFinishedJobsImmediately(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{RemoveFinishedJobs: queue.RemoveFinishedJobsImmediately})
	events := f.q.Events(testContext(t))
	done := f.q.CreateJob("ok")
	dead := f.q.CreateJob("fail").SetRetryMax(0)
	_, err := f.q.AddJob(testContext(t), done, dead)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Data == "fail" {
			return nil, errors.New("no")
		}
		return nil, nil
	}))
	waitFor(t, events, queue.EventRemoved, done.ID)
	waitFor(t, events, queue.EventRemoved, dead.ID)
	assert.Equal(t, 0, f.count(t))
}

func TestProcessConcurrency(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 3})
	f.add(t, 8)
	var mu sync.Mutex
	running, peak := 0, 0
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	}))
	handlers := func() int {
		mu.Lock()
		defer mu.Unlock()
		return running
	}
	require.Eventually(t, func() bool { return f.q.Running() == 3 && handlers() == 3 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, f.q.SetConcurrency(5))
	require.Eventually(t, func() bool { return f.q.Running() == 5 && handlers() == 5 }, 10*time.Second, 10*time.Millisecond,
		"a higher concurrency takes effect at once")
	assert.False(t, f.q.Idle())
	close(release)
	require.Eventually(t, func() bool {
		s, err := f.q.Summary(testContext(t))
		return err == nil && s.Completed == 8
	}, 20*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 5, peak, "never more handlers than the concurrency")
}

// A delayed job of high priority must not hold back due jobs of lower priority (the
// original's issue #83).
func TestProcessDelayedJobDoesNotStarveDueJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	delayed := f.q.CreateJob("delayed").SetPriority(job.Highest).SetDateEnable(time.Now().Add(time.Hour))
	due := []*job.Job{f.q.CreateJob("a").SetPriority(job.Low), f.q.CreateJob("b").SetPriority(job.Lowest)}
	_, err := f.q.AddJob(testContext(t), append(due, delayed)...)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))
	assert.Equal(t, due[0].ID, waitFor(t, events, queue.EventCompleted, "").JobID, "higher priority first")
	assert.Equal(t, due[1].ID, waitFor(t, events, queue.EventCompleted, "").JobID)
	assert.Equal(t, job.Waiting, f.get(t, delayed.ID).Status)
}

// An idle queue wakes itself for its next delayed job, with no review to prompt it.
func TestProcessDelayedJobStartsOnTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	events := f.q.Events(testContext(t))
	started := make(chan time.Time, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- time.Now()
		return nil, nil
	}))
	waitFor(t, events, queue.EventIdle, "")
	enable := time.Now().Add(1500 * time.Millisecond)
	j := f.q.CreateJob(nil).SetDateEnable(enable)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	select {
	case at := <-started:
		assert.False(t, at.Before(enable.Add(-50*time.Millisecond)), "not before its dateEnable")
		assert.Less(t, at.Sub(enable), time.Second, "within a second of its dateEnable")
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed job never started")
	}
}

func TestProcessLogLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{LimitJobLogs: 4})
	events := f.q.Events(testContext(t), queue.EventCompleted)
	j := f.q.CreateJob(nil).SetRepeat(3).SetRepeatDelay(0)
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) { return nil, nil }))
	for range 4 {
		waitFor(t, events, queue.EventCompleted, j.ID)
	}
	got := f.get(t, j.ID)
	assert.Len(t, got.Log, 4)
	assert.Contains(t, messages(got.Log), job.MessageLogsTruncated)
	assert.Equal(t, job.Completed, got.Status)
}

func TestAJobAddedToAnIdleQueueIsInsertedClaimed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	release := make(chan struct{})
	got := make(chan *job.Job, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		got <- j
		<-release
		return nil, nil
	}))
	waitFor(t, events, queue.EventIdle, "")

	type payload struct {
		N    int
		Tags []string
		At   time.Time
	}
	sent := payload{N: 7, Tags: []string{"a"}, At: time.Now().UTC().Truncate(time.Millisecond)}
	j := f.q.CreateJob(sent)
	added, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)
	assert.Equal(t, 1, f.q.Running(), "running when AddJob returns: no claim query came between")
	assert.Same(t, j, added[0])
	assert.Equal(t, job.Active, j.Status, "AddJob returns the job as stored")
	assert.Equal(t, 1, j.ProcessCount)
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive}, messages(j.Log))
	waitFor(t, events, queue.EventAdded, j.ID)
	waitFor(t, events, queue.EventActive, j.ID)

	var run *job.Job
	select {
	case run = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not start")
	}
	assert.NotSame(t, j, run, "the handler has a job of its own")
	stored := f.get(t, j.ID)
	assert.Equal(t, stored, run, "the handler's job is the stored one, as a claim would have read it")
	assert.Equal(t, f.q.ID(), stored.QueueID)
	var p payload
	require.NoError(t, run.DataAs(&p))
	assert.Equal(t, sent.N, p.N)
	assert.Equal(t, sent.Tags, p.Tags)
	assert.True(t, sent.At.Equal(p.At))

	close(release)
	waitFor(t, events, queue.EventCompleted, j.ID)
	done := f.get(t, j.ID)
	assert.Equal(t, job.Completed, done.Status)
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive, job.MessageCompleted}, messages(done.Log))
}

func TestABusyQueueAddsJobsWaiting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-release
		return nil, nil
	}))
	waitFor(t, events, queue.EventIdle, "")
	first := f.add(t, 1)[0]
	assert.Equal(t, job.Active, first.Status, "the one slot was free")
	second := f.add(t, 1)[0]
	assert.Equal(t, job.Waiting, second.Status, "no slot free: added waiting, for a claim")
	assert.Equal(t, job.Waiting, f.get(t, second.ID).Status)
	close(release)
	waitFor(t, events, queue.EventCompleted, second.ID)
}
