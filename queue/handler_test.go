package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

type report struct {
	Recipient string `json:"recipient"`
	Pages     int    `json:"pages"`
}

func TestHandlerForDecodesThePayload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	good, err := f.q.AddJob(testContext(t), f.q.CreateJob(report{Recipient: "ops", Pages: 3}))
	require.NoError(t, err)
	bad, err := f.q.AddJob(testContext(t), f.q.CreateJob("not a report").SetRetryMax(0))
	require.NoError(t, err)

	got := make(chan report, 2)
	require.NoError(t, f.q.Process(queue.HandlerFor(func(ctx context.Context, j *job.Job, r report) (any, error) {
		got <- r
		return r.Pages, nil
	})))
	waitFor(t, events, queue.EventCompleted, good[0].ID)
	e := waitFor(t, events, queue.EventTerminated, bad[0].ID)
	assert.ErrorIs(t, e.Err, queue.ErrDecode)
	assert.Equal(t, report{Recipient: "ops", Pages: 3}, <-got)
	assert.Empty(t, got, "the handler is not called for a payload that does not decode")
	last := f.get(t, bad[0].ID).GetLastLog()
	assert.Contains(t, last.ErrorMessage, "payload", "the stored error says the payload did not decode")
}

func TestMiddlewareWrapsTheHandlerInOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trace []string
	mark := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		trace = append(trace, s)
	}
	wrap := func(name string) queue.Middleware {
		return func(next queue.Handler) queue.Handler {
			return func(ctx context.Context, j *job.Job) (any, error) {
				mark(name + " in")
				res, err := next(ctx, j)
				mark(name + " out")
				return res, err
			}
		}
	}
	f := newFixture(t, &queue.Options{Middleware: []queue.Middleware{wrap("a"), wrap("b")}})
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) {
		mark("handler")
		return nil, nil
	}))
	waitFor(t, events, queue.EventCompleted, j.ID)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a in", "b in", "handler", "b out", "a out"}, trace)
}

type traceKey struct{}

// traceHandler copies the trace id of a record's context into the record.
type traceHandler struct {
	slog.Handler
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(traceKey{}).(string); ok {
		r.AddAttrs(slog.String("trace", id))
	}
	return h.Handler.Handle(ctx, r)
}

func TestBaseContextReachesHandlersAndLogs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf strings.Builder
	logger := slog.New(traceHandler{slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)})
	f := newFixture(t, &queue.Options{
		BaseContext: func() context.Context { return context.WithValue(context.Background(), traceKey{}, "t-42") },
		Logger:      logger,
	})
	events := f.q.Events(testContext(t))
	j, err := f.q.AddJob(testContext(t), f.q.CreateJob(nil).SetRetryMax(0))
	require.NoError(t, err)
	seen := make(chan any, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		seen <- ctx.Value(traceKey{})
		return nil, assert.AnError
	}))
	waitFor(t, events, queue.EventTerminated, j[0].ID)
	assert.Equal(t, "t-42", <-seen, "the handler's context derives from BaseContext")
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "trace=t-42", "the job's log records carry the handler's context")
}

func TestBadHandlerOptionsAreRefused(t *testing.T) {
	t.Parallel()
	for _, opts := range []*queue.Options{
		{Middleware: []queue.Middleware{nil}},
		{EventBuffer: -1},
	} {
		q, err := queue.New(testContext(t), nil, opts)
		assert.Nil(t, q)
		assert.ErrorIs(t, err, queue.ErrInvalidOption)
	}
	assert.Nil(t, queue.HandlerFor[int](nil), "a nil typed handler gives a nil Handler, which Process refuses")
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestOnTerminatedIsCalledOnceWithTheLastError(t *testing.T) {
	t.Parallel()
	type call struct {
		j   *job.Job
		err error
	}
	calls := make(chan call, 4)
	f := newFixture(t, &queue.Options{OnTerminated: func(j *job.Job, err error) {
		calls <- call{j, err}
		panic("a hook that panics does not take the queue down")
	}})
	events := f.q.Events(testContext(t))
	added, err := f.q.AddJob(testContext(t), f.q.CreateJob(nil).SetRetryMax(1).SetRetryDelay(0))
	require.NoError(t, err)
	var runs atomic.Int32
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) {
		return nil, fmt.Errorf("run %d failed", runs.Add(1))
	}))
	e := waitFor(t, events, queue.EventTerminated, added[0].ID)
	assert.EqualError(t, e.Err, "run 2 failed", "the terminated event carries the last error")
	c := <-calls
	assert.EqualError(t, c.err, "run 2 failed")
	assert.Equal(t, job.Terminated, c.j.Status)
	assert.Equal(t, added[0].ID, c.j.ID)
	assert.Equal(t, job.MessageFailed, c.j.GetLastLog().Message)
	assert.Empty(t, calls, "one call for the one job that terminated")
	assert.Equal(t, int32(2), runs.Load(), "a retry is not a termination")
}

// The queue's RetryBackoff sets the retry delay of a linear job, and a panic in it falls
// back to the linear delay instead of taking the processing loop down.
func TestRetryBackoffOnTheQueue(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	f := newFixture(t, &queue.Options{RetryBackoff: func(j *job.Job, retry int) time.Duration {
		if calls.Add(1) == 2 {
			panic("a policy that panics does not take the queue down")
		}
		return time.Duration(retry) * time.Hour
	}})
	events := f.q.Events(testContext(t))
	added, err := f.q.AddJob(testContext(t),
		f.q.CreateJob(1).SetRetryMax(3).SetRetryDelay(time.Minute),
		f.q.CreateJob(2).SetRetryMax(3).SetRetryDelay(time.Minute))
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) {
		return nil, errors.New("fails")
	}))
	start := time.Now()
	for _, j := range added {
		waitFor(t, events, queue.EventFailed, j.ID)
	}
	var hour, minute int
	for _, j := range added {
		got := f.get(t, j.ID)
		require.Equal(t, job.Failed, got.Status)
		switch wait := got.DateEnable.Sub(start); {
		case wait > 59*time.Minute && wait < 61*time.Minute:
			hour++
		case wait > 50*time.Second && wait < 70*time.Second:
			minute++
		default:
			t.Errorf("job %s retries after %v", j.ID, wait)
		}
	}
	assert.Equal(t, 1, hour, "the queue's policy: retry 1 after an hour")
	assert.Equal(t, 1, minute, "the panic fell back to RetryDelay × 1")
}
