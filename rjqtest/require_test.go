package rjqtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqtest"
)

// TestMain stops the servers both finders may have started: testserver's (for the tests of
// Require*) and rjqtest.Addr's (for NewQueue's).
func TestMain(m *testing.M) {
	code := m.Run()
	rjqtest.Cleanup()
	testserver.Stop()
	os.Exit(code)
}

// recorder is a testing.TB whose Fatalf records the failure instead of ending the test,
// to check what the helpers say.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

// processing returns a ready queue in a database of the test's own that processes its
// jobs: a job whose payload is "fail" fails, any other completes with its payload.
func processing(t *testing.T) *queue.Queue {
	t.Helper()
	srv := testserver.Get(t)
	q, err := queue.New(t.Context(), queuetest.ConnectTo(srv, testserver.DB(t)),
		queuetest.Options(queue.Options{Name: "rjqtest"}))
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := q.Stop(context.Background()); err != nil && !errors.Is(err, queue.ErrStopped) {
			t.Errorf("stop: %v", err)
		}
	})
	require.NoError(t, q.Ready(t.Context()))
	require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
		if j.Data == "fail" {
			return nil, errors.New("the mail server said no")
		}
		return j.Data, nil
	}))
	return q
}

func TestRequireCompleted(t *testing.T) {
	q := processing(t)
	added := rjqtest.RequireAdded(t, q, q.CreateJob("hello"), q.CreateJob("fail").SetRetryMax(0))
	require.Len(t, added, 2)

	done := rjqtest.RequireCompleted(t, q, added[0].ID, 30*time.Second)
	var got string
	require.NoError(t, done.Result(&got))
	assert.Equal(t, "hello", got)

	r := &recorder{TB: t}
	assert.Nil(t, rjqtest.RequireCompleted(r, q, added[1].ID, 30*time.Second))
	require.True(t, r.failed, "a terminated job fails RequireCompleted")
	assert.Contains(t, r.msg, "want status completed, it ended terminated")
	assert.Contains(t, r.msg, "Job processing failed: the mail server said no", "the last run's error")
	assert.Contains(t, r.msg, "retryCount 0 of retryMax 0")

	ended := rjqtest.RequireStatus(t, q, added[1].ID, job.Terminated, 30*time.Second)
	assert.Equal(t, job.Terminated, ended.Status)
}

func TestRequireStatusSaysWhereTheJobIsWhenTimeRunsOut(t *testing.T) {
	q := processing(t)
	later := rjqtest.RequireAdded(t, q, q.CreateJob("hello").SetDateEnable(time.Now().Add(time.Hour)))[0]

	r := &recorder{TB: t}
	assert.Nil(t, rjqtest.RequireCompleted(r, q, later.ID, 200*time.Millisecond))
	require.True(t, r.failed)
	assert.Contains(t, r.msg, "want status completed within 200ms, it is waiting")
	assert.Contains(t, r.msg, job.MessageAdded)

	waiting := rjqtest.RequireStatus(t, q, later.ID, job.Waiting, 30*time.Second)
	assert.Equal(t, later.ID, waiting.ID)

	r = &recorder{TB: t}
	rjqtest.RequireStatus(r, q, later.ID, job.Failed, 200*time.Millisecond)
	require.True(t, r.failed, "a status polled for and never reached")
	assert.Contains(t, r.msg, "want status failed within 200ms, it is waiting")
}

func TestRequireAddedReportsARefusal(t *testing.T) {
	q := processing(t)
	r := &recorder{TB: t}
	assert.Nil(t, rjqtest.RequireAdded(r, q, q.CreateJob(nil).SetPriority(7)))
	require.True(t, r.failed)
	assert.Contains(t, r.msg, "priority")
}

// TestRunAgreesWithAQueue runs the same handlers through Run and through a queue, and
// finds the jobs left alike: Run restates the queue's outcome rules, and this is where
// the two would part.
func TestRunAgreesWithAQueue(t *testing.T) {
	handlers := map[string]queue.Handler{
		"complete": returns("done", nil),
		"progress": func(ctx context.Context, j *job.Job) (any, error) {
			if err := j.UpdateProgress(ctx, 40); err != nil {
				return nil, err
			}
			return nil, j.AddLog(ctx, map[string]any{"rows": 7}, "imported", job.Warning, "")
		},
		"update": func(ctx context.Context, j *job.Job) (any, error) {
			j.Data = "changed"
			return nil, j.Update(ctx)
		},
		"retry":     returns(nil, errors.New("boom")),
		"terminate": returns(nil, errors.New("boom")),
		"cancel":    returns(nil, job.Cancel("not wanted")),
		"passback": func(_ context.Context, j *job.Job) (any, error) {
			j.Data = "later"
			return j, nil
		},
		"repeat": returns("done", nil),
		"panic":  func(context.Context, *job.Job) (any, error) { panic("kaboom") },
	}
	options := map[string]job.Options{
		"retry":  {RetryMax: 1, RetryDelay: time.Hour},
		"repeat": {Repeat: 1, RepeatDelay: time.Hour},
	}
	newJob := func(name string) *job.Job {
		o := options[name]
		o.Name = name
		return job.New("payload", o)
	}

	srv := testserver.Get(t)
	q, err := queue.New(t.Context(), queuetest.ConnectTo(srv, testserver.DB(t)),
		queuetest.Options(queue.Options{Concurrency: 4}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	require.NoError(t, q.Ready(t.Context()))
	require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) { return handlers[j.Name](ctx, j) }))

	want := map[string]*rjqtest.Result{}
	var jobs []*job.Job
	for name, h := range handlers {
		res, err := rjqtest.Run(t.Context(), h, newJob(name))
		require.NoError(t, err, name)
		want[name] = res
		jobs = append(jobs, newJob(name))
	}
	for _, added := range rjqtest.RequireAdded(t, q, jobs...) {
		t.Run(added.Name, func(t *testing.T) {
			res := want[added.Name]
			assert.Equal(t, shapeOf(res.Job), shapeOf(ranOnce(t, q, added.ID)))
		})
	}
}

// ranOnce waits for the job's first run to end. RequireStatus cannot tell a job waiting
// for its first run from one waiting again after it.
func ranOnce(t *testing.T, q *queue.Queue, id string) *job.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		jobs, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		if j := jobs[0]; j.ProcessCount > 0 && j.Status != job.Active {
			return j
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s did not run: %v", id, ctx.Err())
		case <-tick.C:
		}
	}
}

// shape is what a run leaves of a job, less its ids and times.
type shape struct {
	Status                   job.Status
	RetryCount, ProcessCount int
	Progress                 float64
	Data                     any
	Log                      []string
}

func shapeOf(j *job.Job) shape {
	s := shape{Status: j.Status, RetryCount: j.RetryCount, ProcessCount: j.ProcessCount, Progress: j.Progress, Data: j.Data}
	for _, e := range j.Log {
		s.Log = append(s.Log, fmt.Sprintf("%s | %s | %s | retryCount %d | processCount %d | %q",
			e.Message, e.Type, e.Status, e.RetryCount, e.ProcessCount, e.ErrorMessage))
	}
	return s
}
