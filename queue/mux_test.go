package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMuxRoutesByName(t *testing.T) {
	var trail []string
	mark := func(s string) queue.Middleware {
		return func(next queue.Handler) queue.Handler {
			return func(ctx context.Context, j *job.Job) (any, error) {
				trail = append(trail, s)
				return next(ctx, j)
			}
		}
	}
	mux := queue.NewMux()
	mux.Use(mark("outer"), mark("inner"))
	mux.Handle("a", func(context.Context, *job.Job) (any, error) { return "did a", nil })
	mux.Handle("b", queue.HandlerFor(func(_ context.Context, _ *job.Job, n int) (any, error) { return n * 2, nil }))
	h := mux.Handler()

	for _, c := range []struct {
		name string
		data any
		want any
	}{{"a", nil, "did a"}, {"b", 21, 42}} {
		trail = nil
		got, err := h(t.Context(), job.New(c.data, job.Options{Name: c.name}))
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
		assert.Equal(t, []string{"outer", "inner"}, trail, "the Mux's middleware, in order")
	}

	_, err := h(t.Context(), job.New(nil, job.Options{Name: "c"}))
	require.ErrorIs(t, err, queue.ErrNoHandler)
	assert.Contains(t, err.Error(), `"c"`)
	assert.Contains(t, err.Error(), "[a b]")
	assert.Equal(t, []string{"a", "b"}, mux.Names())

	// Registered after Handler was taken: routed too.
	mux.Handle("c", func(context.Context, *job.Job) (any, error) { return nil, errors.New("c failed") })
	_, err = h(t.Context(), job.New(nil, job.Options{Name: "c"}))
	assert.EqualError(t, err, "c failed")
}

func TestMuxRefusesMistakes(t *testing.T) {
	mux := queue.NewMux()
	ok := func(context.Context, *job.Job) (any, error) { return nil, nil }
	mux.Handle("a", ok)
	assert.Panics(t, func() { mux.Handle("a", ok) }, "twice")
	assert.Panics(t, func() { mux.Handle("", ok) }, "no name")
	assert.Panics(t, func() { mux.Handle("b", nil) }, "nil handler")
	assert.Panics(t, func() { mux.Use(nil) }, "nil middleware")
}

// A queue serving a Mux: each name reaches its handler; a name the worker does not know
// fails and is retried, for a newer worker to take.
func TestMuxOnAQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, Concurrency: 2})
	ctx := testContext(t)
	mux := queue.NewMux()
	mux.Handle("welcome", func(context.Context, *job.Job) (any, error) { return "welcomed", nil })
	mux.Handle("invoice", func(context.Context, *job.Job) (any, error) { return "invoiced", nil })
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventFailed)
	require.NoError(t, f.q.Process(mux.Handler()))

	var ids []string
	for _, name := range []string{"welcome", "invoice", "unknown"} {
		j := f.q.CreateJob(nil).SetName(name).SetRetryDelay(time.Hour)
		_, err := f.q.AddJob(ctx, j)
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	for _, want := range []string{"welcomed", "invoiced"} {
		id := ids[0]
		ids = ids[1:]
		done, err := f.q.Wait(ctx, id)
		require.NoError(t, err)
		var got string
		require.NoError(t, done.Result(&got))
		assert.Equal(t, want, got)
	}
	waitFor(t, events, queue.EventFailed, ids[0])
	failed := f.get(t, ids[0])
	assert.Equal(t, job.Failed, failed.Status, "retried like any failure")
	assert.Equal(t, 1, failed.RetryCount)
	assert.Contains(t, failed.GetLastLog().ErrorMessage, `no handler for the job's name "unknown"`)
}
