package queue_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Hand-written garbage at the head of the queue, at concurrency 1: each shape must be
// skipped (never blocking the good jobs behind it, never stranding them active), left as
// it was, and reported once with its id.
func TestGarbageWaitingDocumentsNeverBlockGoodJobs(t *testing.T) {
	t.Parallel()
	shapes := map[string]map[string]any{
		"timeout not a number":   {"timeout": "x"},
		"log not an array":       {"log": "x"},
		"retryCount missing":     {"retryCount": r.Literal()},
		"dateEnable a string":    {"dateEnable": "tomorrow"},
		"processCount a string":  {"processCount": "0"},
		"log entry not a object": {"log": []any{"x"}},
	}
	f := newFixture(t, &queue.Options{Concurrency: 1, MasterInterval: -1})
	ctx := testContext(t)
	var bad []string
	for _, fields := range shapes {
		j := f.q.CreateJob("bad").SetPriority(job.Highest)
		_, err := f.q.AddJob(ctx, j)
		require.NoError(t, err)
		f.setRaw(t, j.ID, fields)
		bad = append(bad, j.ID)
	}
	good := f.add(t, 5)
	completed := f.q.Events(ctx, queue.EventCompleted)
	errs := f.q.Events(ctx, queue.EventError)
	var ran sync.Map
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		ran.Store(j.ID, true)
		return nil, nil
	}))
	waitForAll(t, completed, queue.EventCompleted, good...)

	reported := map[string]int{}
	drain := time.After(500 * time.Millisecond)
	for done := false; !done; {
		select {
		case e := <-errs:
			if e.JobID != "" {
				reported[e.JobID]++
				assert.ErrorIs(t, e.Err, job.ErrInvalid)
			}
		case <-drain:
			done = true
		}
	}
	for _, id := range bad {
		_, didRun := ran.Load(id)
		assert.False(t, didRun, "garbage %s was handed to the handler", id)
		doc := f.rawDoc(t, id)
		assert.Equal(t, "waiting", doc["status"], "garbage %s is left as it was", id)
	}
	// Each is reported, once (a dateEnable that is no time is proposed by the read so that
	// it is).
	assert.Len(t, reported, len(shapes), "reported: %v", reported)
	for id, n := range reported {
		assert.Equal(t, 1, n, "job %s reported %d times", id, n)
	}
}

// One malformed active document must not stop a review: the other orphans are failed,
// finished jobs removed and the State Document written.
func TestReviewSurvivesAMalformedActiveDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, RemoveFinishedJobs: queue.RemoveFinishedJobsImmediately})
	ctx := testContext(t)
	jobs := f.add(t, 3)
	past := time.Now().Add(-time.Hour)
	f.setRaw(t, jobs[0].ID, map[string]any{"status": "active", "dateEnable": past, "log": "garbage", "retryCount": "many"})
	f.setRaw(t, jobs[1].ID, map[string]any{"status": "active", "dateEnable": past})
	f.setRaw(t, jobs[2].ID, map[string]any{"status": "completed", "dateFinished": past})
	res, err := f.q.Review(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Reviewed)
	assert.Equal(t, 1, res.Removed)
	assert.Equal(t, "failed", f.rawDoc(t, jobs[0].ID)["status"])
	assert.Equal(t, "failed", f.rawDoc(t, jobs[1].ID)["status"])
	assert.Nil(t, f.rawDoc(t, jobs[2].ID))
	state := f.rawDoc(t, job.StateDocumentID)
	require.NotNil(t, state)
	assert.Equal(t, "reviewed", state["state"])
}

// A handler result the driver cannot encode must not leave the job active: it completes
// without the result, and Result says why.
func TestAResultThatCannotBeStoredStillCompletesTheJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	results := []any{make(chan int), math.NaN(), func() int { return 1 }, map[string]any{"big": uint64(math.MaxUint64)}}
	jobs := f.add(t, len(results))
	byID := map[string]any{}
	for i, j := range jobs {
		byID[j.ID] = results[i]
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) { return byID[j.ID], nil }))
	waitForAll(t, events, queue.EventCompleted, jobs...)
	for _, j := range jobs {
		got := f.get(t, j.ID)
		assert.Equal(t, job.Completed, got.Status)
		last := got.GetLastLog()
		assert.Nil(t, last.Data)
		assert.Equal(t, job.MessageCompleted, last.Message)
		var v any
		assert.ErrorIs(t, got.Result(&v), job.ErrResultNotStored)
	}
}

// A job passed back with an invalid option fails with the reason instead of being stuck.
func TestPassingBackAnInvalidJobFailsIt(t *testing.T) {
	t.Parallel()
	got := terminatedBy(t, func(ctx context.Context, j *job.Job) (any, error) {
		j.Priority = 7
		return j, nil
	})
	assert.Equal(t, job.Terminated, got.Status)
	assert.Contains(t, got.GetLastLog().ErrorMessage, "priority")
	assert.Equal(t, job.Normal, got.Priority, "the invalid job was not stored")
}

// terminatedBy runs handler on one job with no retries, and returns the job as stored
// once it is terminated.
func terminatedBy(t *testing.T, handler queue.Handler) *job.Job {
	t.Helper()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	j := f.q.CreateJob(nil).SetRetryMax(0)
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)
	events := f.q.Events(ctx, queue.EventTerminated)
	require.NoError(t, f.q.Process(handler))
	waitFor(t, events, queue.EventTerminated, j.ID)
	return f.get(t, j.ID)
}

type nilErr struct{ msg string }

func (e *nilErr) Error() string { return e.msg } // panics on a nil receiver

// A handler that returns a typed nil error fails its job; the process does not crash.
func TestATypedNilErrorFailsTheJob(t *testing.T) {
	t.Parallel()
	got := terminatedBy(t, func(ctx context.Context, j *job.Job) (any, error) {
		var e *nilErr
		return nil, e
	})
	assert.Contains(t, got.GetLastLog().ErrorMessage, "nil *queue_test.nilErr")
}

type node struct{ Next *node }

// Payloads, names and options the driver cannot store faithfully are refused with an
// error wrapping job.ErrInvalid, before anything is written.
func TestAddJobRefusesWhatCannotBeStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	loop := &node{}
	loop.Next = loop
	cases := map[string]*job.Job{
		"func payload":        f.q.CreateJob(func() int { return 1 }),
		"chan payload":        f.q.CreateJob(make(chan int)),
		"cyclic map":          f.q.CreateJob(cyclic),
		"cyclic pointer":      f.q.CreateJob(loop),
		"NaN":                 f.q.CreateJob(math.NaN()),
		"infinity":            f.q.CreateJob(map[string]any{"x": math.Inf(1)}),
		"complex":             f.q.CreateJob(complex(1, 2)),
		"integer beyond 2^53": f.q.CreateJob(int64(1) << 60),
		"invalid UTF-8 data":  f.q.CreateJob("\xff\xfe"),
		"invalid UTF-8 name":  f.q.CreateJob(nil).SetName("\xff"),
		"year 9999":           f.q.CreateJob(nil).SetDateEnable(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)),
		"time in payload":     f.q.CreateJob(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)),
		"retryMax MaxInt":     f.q.CreateJob(nil).SetRetryMax(math.MaxInt),
		"repeat MaxInt":       f.q.CreateJob(nil).SetRepeat(math.MaxInt),
		"a query term":        f.q.CreateJob(r.Now()),
	}
	for name, j := range cases {
		_, err := f.q.AddJob(ctx, j)
		assert.ErrorIs(t, err, job.ErrInvalid, name)
	}
	assert.Equal(t, 0, f.count(t), "nothing was written")
}

// A call given a context that has ended sends nothing and returns the context's error.
func TestCallsHonourAnEndedContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	j := f.add(t, 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"Ready":         func() error { return f.q.Ready(ctx) },
		"AddJob":        func() error { _, err := f.q.AddJob(ctx, f.q.CreateJob(nil)); return err },
		"GetJob":        func() error { _, err := f.q.GetJob(ctx, j.ID); return err },
		"CancelJob":     func() error { _, err := f.q.CancelJob(ctx, "", j.ID); return err },
		"RemoveJob":     func() error { _, err := f.q.RemoveJob(ctx, j.ID); return err },
		"Summary":       func() error { _, err := f.q.Summary(ctx); return err },
		"Review":        func() error { _, err := f.q.Review(ctx); return err },
		"Pause":         func() error { return f.q.Pause(ctx, false) },
		"Resume":        func() error { return f.q.Resume(ctx, false) },
		"Update":        func() error { return j.Update(ctx) },
		"FindJobByName": func() error { _, err := f.q.FindJobByName(ctx, "x"); return err },
	}
	for name, call := range calls {
		for range 5 { // Ready used to pick between ready and done at random
			assert.ErrorIs(t, call(), context.Canceled, name)
		}
	}
	assert.False(t, f.q.Paused())
	assert.Equal(t, job.Waiting, f.get(t, j.ID).Status, "nothing was changed")
}

// Stop called from inside a handler with the handler's context returns at once; the
// queue stops once the handler has returned, with its outcome written.
func TestStopFromAHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	j := f.add(t, 1)[0]
	stopped := make(chan error, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		start := time.Now()
		err := f.q.Stop(ctx)
		if time.Since(start) > 5*time.Second {
			err = errors.New("Stop waited for the handler that called it")
		}
		stopped <- err
		return "done", nil
	}))
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the handler never returned from Stop")
	}
	require.Eventually(t, func() bool { return f.rawDoc(t, j.ID)["status"] == "completed" }, 15*time.Second, 20*time.Millisecond)
	assert.ErrorIs(t, f.q.Ready(context.Background()), queue.ErrStopped)
	assert.ErrorIs(t, f.q.Stop(context.Background()), queue.ErrStopped)
}

// A Stop from outside the handlers, after a handler stopped the queue, waits for that
// shutdown to finish: a program that stops its queue on the way out does not exit with the
// handler's outcome unwritten, and nothing of the queue runs after it returns (this test's
// database, dropped at its end, was re-created by the queue's changefeed while the
// shutdown went on, before Stop waited).
func TestStopWaitsForTheShutdownAHandlerBegan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	j := f.add(t, 1)[0]
	events := f.q.Events(context.Background())
	began, release := make(chan error, 1), make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		began <- f.q.Stop(ctx)
		<-release
		return "done", nil
	}))
	select {
	case err := <-began:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the handler never ran")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.q.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v while the handler that stopped the queue was still running", err)
	case <-time.After(300 * time.Millisecond):
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, f.q.Stop(ctx), context.Canceled, "a Stop whose ctx has ended does not wait")
	close(release)
	select {
	case err := <-stopped:
		require.ErrorIs(t, err, queue.ErrStopped)
	case <-time.After(15 * time.Second):
		t.Fatal("Stop never returned")
	}
	assert.Equal(t, "completed", f.rawDoc(t, j.ID)["status"], "the outcome is written when Stop returns")
	for range events {
	}
	for range 5 {
		assert.ErrorIs(t, f.q.Stop(ctx), queue.ErrStopped, "a stopped queue says so, whatever its ctx")
	}
}

// Errors carry the server's message, not the query the driver appends (10 KB for a claim).
func TestErrorsDoNotCarryTheQuery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.add(t, 1)
	_, err := f.q.FindJob(testContext(t), func(row r.Term) r.Term { return row.Field("id").Div(2).Gt(0) })
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "r.DB(")
	assert.Less(t, len(err.Error()), 300, err.Error())
}

// Progress reported in a tight loop is coalesced; the last value lands.
func TestProgressInATightLoopIsCoalesced(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	j := f.add(t, 1)[0]
	const calls = 2000
	result := make(chan error, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		start := time.Now()
		for i := 1; i <= calls; i++ {
			if err := j.UpdateProgress(ctx, float64(i)/calls*99); err != nil {
				result <- err
				return nil, err
			}
		}
		elapsed := time.Since(start)
		// Wait until the last value is stored, as a coalesced write lands later.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			// Not f.rawDoc: a handler runs outside the test's goroutine.
			var p float64
			if cur, err := f.table().Get(j.ID).Field("progress").Run(f.raw); err == nil {
				_ = cur.One(&p)
			}
			if p == 99 {
				result <- nil
				return elapsed, nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
		result <- errors.New("the last progress value never landed")
		return nil, nil
	}))
	require.NoError(t, <-result)
	require.Eventually(t, func() bool { return f.rawDoc(t, j.ID)["status"] == "completed" }, 15*time.Second, 20*time.Millisecond)
	writes := 0
	for _, e := range f.get(t, j.ID).Log {
		if strings.HasPrefix(e.Message, "Job progress updated") {
			writes++
		}
	}
	assert.Less(t, writes, calls/10, "progress writes were not coalesced")
	assert.Positive(t, writes)
}

// A waiting document written by hand whose id is not a string (here a number, of the
// highest priority) never stops workers that split the table's jobs into parts: a part
// read once sliced every id, and such a document failed every part read of every worker
// for as long as it waited, so that no job was claimed at all once the workers knew of
// each other. It is reported, left as it was, and the good jobs all complete.
func TestAnIDThatIsNotAStringNeverStopsWorkersThatSplitTheTable(t *testing.T) {
	t.Parallel()
	opts := func() *queue.Options {
		// Beats every 400 ms: the workers learn of each other, and claim by parts, at once.
		return &queue.Options{Concurrency: 5, Heartbeat: 400 * time.Millisecond, MasterInterval: -1}
	}
	f := newFixture(t, opts())
	other := newQueue(t, f, opts())
	ctx := testContext(t)

	model, err := f.q.AddJob(ctx, f.q.CreateJob("bad").SetPriority(job.Highest))
	require.NoError(t, err)
	doc := f.rawDoc(t, model[0].ID)
	_, err = f.q.RemoveJob(ctx, model[0].ID)
	require.NoError(t, err)
	doc["id"] = 42
	_, err = f.table().Insert(doc).RunWrite(f.raw)
	require.NoError(t, err)

	completed := f.q.Events(ctx, queue.EventCompleted)
	errs := f.q.Events(ctx, queue.EventError)
	handle := func(ctx context.Context, j *job.Job) (any, error) {
		time.Sleep(20 * time.Millisecond) // the work: long enough for the workers to beat while they run
		return nil, nil
	}
	require.NoError(t, f.q.Process(handle))
	require.NoError(t, other.Process(handle))
	good := f.add(t, 300)
	waitForAll(t, completed, queue.EventCompleted, good...)

	var raw map[string]any
	cur, err := f.table().Get(42).Run(f.raw)
	require.NoError(t, err)
	require.NoError(t, cur.One(&raw))
	assert.Equal(t, "waiting", raw["status"], "the document is left as it was")
	require.Eventually(t, func() bool {
		for {
			select {
			case e := <-errs:
				if e.JobID == "42" {
					return true
				}
			default:
				return false
			}
		}
	}, 10*time.Second, 10*time.Millisecond, "the document of id 42 is reported")
}
