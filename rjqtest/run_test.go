package rjqtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqtest"
)

// run runs h on j and fails the test if Run refuses them.
func run(t *testing.T, h queue.Handler, j *job.Job, opts ...rjqtest.Option) *rjqtest.Result {
	t.Helper()
	res, err := rjqtest.Run(t.Context(), h, j, opts...)
	require.NoError(t, err)
	require.NotNil(t, res.Job)
	return res
}

// returns is a handler that returns result and err.
func returns(result any, err error) queue.Handler {
	return func(context.Context, *job.Job) (any, error) { return result, err }
}

type myErr struct{}

func (*myErr) Error() string { return "my error" }

func TestOutcomes(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		opts    job.Options
		handler queue.Handler
		outcome rjqtest.Outcome
		status  job.Status
		retries int
		// progress is the job's progress afterwards.
		progress float64
		// message and logType are those of the outcome's log entry, the job's last.
		message string
		logType job.LogType
		errIs   error
	}{
		{"completed", job.Options{}, returns("done", nil),
			rjqtest.Completed, job.Completed, 0, 100, job.MessageCompleted, job.Information, nil},
		{"failed with a retry left", job.Options{RetryMax: 1}, returns(nil, boom),
			rjqtest.Failed, job.Failed, 1, 0, job.MessageFailed, job.Warning, boom},
		{"terminated with no retry left", job.Options{RetryMax: job.NoRetries}, returns(nil, boom),
			rjqtest.Terminated, job.Terminated, 0, 0, job.MessageFailed, job.Error, boom},
		{"cancelled with a reason", job.Options{RetryMax: 3}, returns(nil, job.Cancel("spam")),
			rjqtest.Cancelled, job.Cancelled, 0, 0, "spam", job.Information, job.ErrCancel},
		{"cancelled by an error wrapping ErrCancel", job.Options{}, returns(nil, fmt.Errorf("no: %w", job.ErrCancel)),
			rjqtest.Cancelled, job.Cancelled, 0, 0, job.MessageCancel, job.Information, job.ErrCancel},
		{"passed back by returning the job", job.Options{}, func(_ context.Context, j *job.Job) (any, error) { return j, nil },
			rjqtest.PassedBack, job.Waiting, 0, 0, job.MessageUpdated, job.Information, nil},
		{"passed back with ErrPassBack", job.Options{}, returns(nil, queue.ErrPassBack),
			rjqtest.PassedBack, job.Waiting, 0, 0, job.MessageUpdated, job.Information, queue.ErrPassBack},
		{"repeating after a success", job.Options{Repeat: 1}, returns("done", nil),
			rjqtest.Repeating, job.Waiting, 0, 0, job.MessageCompleted, job.Information, nil},
		{"repeating after a failure with no retry left", job.Options{Repeat: job.RepeatForever, RetryMax: job.NoRetries}, returns(nil, boom),
			rjqtest.Repeating, job.Waiting, 0, 0, job.MessageFailed, job.Error, boom},
		{"failed by a panic", job.Options{RetryMax: 1}, func(context.Context, *job.Job) (any, error) { panic(boom) },
			rjqtest.Failed, job.Failed, 1, 0, job.MessageFailed, job.Warning, boom},
		{"failed by a nil error pointer", job.Options{RetryMax: job.NoRetries}, returns(nil, (*myErr)(nil)),
			rjqtest.Terminated, job.Terminated, 0, 0, job.MessageFailed, job.Error, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, c.handler, job.New("payload", c.opts))
			assert.Equal(t, c.outcome, res.Outcome)
			assert.Equal(t, c.status, res.Job.Status)
			assert.Equal(t, c.retries, res.Job.RetryCount)
			assert.Equal(t, c.progress, res.Job.Progress)
			assert.Equal(t, 1, res.Job.ProcessCount)
			last := res.Job.Log[len(res.Job.Log)-1]
			assert.Equal(t, c.message, last.Message)
			assert.Equal(t, c.logType, last.Type)
			assert.Equal(t, rjqtest.QueueID, last.QueueID)
			switch {
			case c.errIs != nil:
				assert.ErrorIs(t, res.Err, c.errIs)
			case c.message == job.MessageFailed:
				assert.Error(t, res.Err)
			default:
				assert.NoError(t, res.Err)
			}
			if c.outcome == rjqtest.PassedBack {
				assert.True(t, res.Job.DateFinished.IsZero(), "a pass-back writes no dateFinished")
			} else {
				assert.WithinDuration(t, time.Now(), res.Job.DateFinished, 5*time.Second)
			}
		})
	}
}

func TestCompletedRecordsTheResult(t *testing.T) {
	type summary struct {
		Sent  int
		Email string `rethinkdb:"email"`
	}
	res := run(t, returns(summary{Sent: 3, Email: "ann@example.com"}, nil), job.New(nil, job.Options{}))
	assert.Equal(t, summary{3, "ann@example.com"}, res.Value)
	var got summary
	require.NoError(t, res.Job.Result(&got))
	assert.Equal(t, summary{3, "ann@example.com"}, got)
	last := res.Job.GetLastLog()
	assert.Equal(t, map[string]any{"Sent": float64(3), "email": "ann@example.com"}, last.Data,
		"stored by the json rule: a rethinkdb tag wins, an untagged field keeps its Go name, numbers as float64")
	assert.GreaterOrEqual(t, last.Duration, time.Duration(0))
	assert.False(t, last.Date.Before(res.Job.DateFinished), "the entry is written as the run ends")
}

func TestUnstorableResultCompletesWithoutIt(t *testing.T) {
	ch := make(chan int)
	res := run(t, returns(ch, nil), job.New(nil, job.Options{}))
	assert.Equal(t, rjqtest.Completed, res.Outcome)
	assert.Equal(t, ch, res.Value)
	last := res.Job.GetLastLog()
	assert.Equal(t, job.MessageCompleted, last.Message)
	assert.Nil(t, last.Data)
	var v any
	err := res.Job.Result(&v)
	assert.ErrorIs(t, err, job.ErrResultNotStored, "Result says why, instead of nothing")
	assert.Contains(t, fmt.Sprint(err), "chan int")
}

func TestFailureEntry(t *testing.T) {
	res := run(t, returns(nil, errors.New("disk full")), job.New(nil, job.Options{RetryMax: job.NoRetries}))
	last := res.Job.GetLastLog()
	assert.Equal(t, "disk full", last.ErrorMessage)
	assert.Equal(t, job.MessageNoErrorStack, last.ErrorStack)
	assert.Equal(t, map[string]any{"name": "errors.errorString", "message": "disk full"}, last.Data)
	assert.Equal(t, job.Terminated, last.Status)

	res = run(t, func(context.Context, *job.Job) (any, error) { panic("kaboom") }, job.New(nil, job.Options{RetryMax: job.NoRetries}))
	var pe *queue.PanicError
	require.ErrorAs(t, res.Err, &pe)
	assert.Equal(t, "kaboom", pe.Value)
	last = res.Job.GetLastLog()
	assert.Equal(t, "handler panicked: kaboom", last.ErrorMessage)
	assert.Contains(t, last.ErrorStack, "TestFailureEntry", "the stack of the panic")

	res = run(t, returns(nil, (*myErr)(nil)), job.New(nil, job.Options{}))
	assert.EqualError(t, res.Err, "handler returned a nil *rjqtest_test.myErr as its error")
}

func TestRetryIsScheduled(t *testing.T) {
	// A job read from a queue after one failed run: its second retry waits twice the delay.
	j := job.New(nil, job.Options{RetryMax: 3, RetryDelay: time.Minute})
	j.Status, j.RetryCount, j.ProcessCount = job.Failed, 1, 1
	res := run(t, returns(nil, errors.New("again")), j)
	assert.Equal(t, rjqtest.Failed, res.Outcome)
	assert.Equal(t, 2, res.Job.RetryCount)
	assert.Equal(t, 2, res.Job.ProcessCount)
	assert.Equal(t, 2*time.Minute, res.Job.DateEnable.Sub(res.Job.DateFinished))

	exp := job.New(nil, job.Options{RetryMax: 3}).SetBackoff(job.Backoff{Exponential: true, Min: time.Second, Max: time.Hour})
	exp.Status, exp.RetryCount, exp.ProcessCount = job.Failed, 2, 2
	res = run(t, returns(nil, errors.New("again")), exp)
	assert.Equal(t, 4*time.Second, res.Job.DateEnable.Sub(res.Job.DateFinished), "Min·2^(retryCount-1) for the third retry")
}

func TestRepeatIsScheduled(t *testing.T) {
	res := run(t, returns(nil, nil), job.New(nil, job.Options{Repeat: 2, RepeatDelay: time.Hour}))
	assert.Equal(t, rjqtest.Repeating, res.Outcome)
	assert.Equal(t, time.Hour, res.Job.DateEnable.Sub(res.Job.DateFinished))

	// The last of its runs completes it.
	j := job.New(nil, job.Options{Repeat: 2})
	j.Status, j.ProcessCount = job.Waiting, 2
	res = run(t, returns(nil, nil), j)
	assert.Equal(t, rjqtest.Completed, res.Outcome)
	assert.Equal(t, 3, res.Job.ProcessCount)
}

func TestPassBackSavesTheHandlersChanges(t *testing.T) {
	res := run(t, func(_ context.Context, j *job.Job) (any, error) {
		j.Data = map[string]any{"step": 2}
		j.Priority = job.High
		return j, nil
	}, job.New(map[string]any{"step": 1}, job.Options{}))
	assert.Equal(t, rjqtest.PassedBack, res.Outcome)
	assert.Equal(t, map[string]any{"step": float64(2)}, res.Job.Data)
	assert.Equal(t, job.High, res.Job.Priority)
	n := len(res.Job.Log)
	require.GreaterOrEqual(t, n, 2)
	assert.Equal(t, job.MessagePassBack, res.Job.Log[n-2].Message)
	updated := res.Job.Log[n-1]
	assert.Equal(t, job.MessageUpdated, updated.Message)
	old, ok := updated.Data.(map[string]any)
	require.True(t, ok, "the replaced values are the entry's data: %#v", updated.Data)
	assert.Equal(t, map[string]any{"step": float64(1)}, old["data"])
	assert.Equal(t, "active", old["status"])

	res = run(t, func(_ context.Context, j *job.Job) (any, error) {
		j.Priority = 7
		return j, nil
	}, job.New(nil, job.Options{RetryMax: job.NoRetries}))
	assert.Equal(t, rjqtest.Terminated, res.Outcome, "a job passed back invalid fails")
	assert.ErrorIs(t, res.Err, job.ErrInvalidPriority)
	assert.Equal(t, job.Normal, res.Job.Priority, "and is not saved")
}

func TestTheHandlerGetsAClaimedJob(t *testing.T) {
	var seen job.Job
	in := job.New(nil, job.Options{Timeout: time.Hour})
	run(t, func(_ context.Context, j *job.Job) (any, error) {
		seen = *j
		return nil, nil
	}, in)
	assert.Equal(t, job.Active, seen.Status)
	assert.Equal(t, 1, seen.ProcessCount)
	assert.WithinDuration(t, time.Now(), seen.DateStarted, 5*time.Second)
	assert.Equal(t, rjqtest.QueueID, seen.QueueID)
	assert.Equal(t, seen.DateStarted.Add(queue.DefaultHeartbeat+time.Second), seen.DateEnable,
		"the lease of a claim with heartbeats on")
	require.Len(t, seen.Log, 2)
	assert.Equal(t, job.MessageAdded, seen.Log[0].Message)
	assert.Equal(t, job.Waiting, seen.Log[0].Status)
	claim := seen.Log[1]
	assert.Equal(t, job.MessageActive, claim.Message)
	assert.Equal(t, job.Active, claim.Status)
	assert.Equal(t, seen.DateStarted, claim.Date)

	assert.Equal(t, job.Created, in.Status, "Run leaves its job alone")
	assert.Empty(t, in.Log)
	assert.Zero(t, in.ProcessCount)
}

func TestTheHandlerReadsItsPayloadAsFromTheDatabase(t *testing.T) {
	type payload struct {
		N    int       `rethinkdb:"n"`
		At   time.Time `rethinkdb:"at"`
		Tags []string
	}
	at := time.Date(2024, 5, 6, 7, 8, 9, 10_000_000, time.UTC)
	var raw any
	var got payload
	run(t, func(_ context.Context, j *job.Job) (any, error) {
		raw = j.Data
		return nil, j.DataAs(&got)
	}, job.New(payload{N: 3, At: at, Tags: []string{"a"}}, job.Options{}))
	m, ok := raw.(map[string]any)
	require.True(t, ok, "a struct payload reads back as a map: %#v", raw)
	stored, ok := m["at"].(time.Time)
	require.True(t, ok, "times read back as times: %#v", m["at"])
	assert.True(t, stored.Equal(at), "%v", stored)
	delete(m, "at")
	assert.Equal(t, map[string]any{"n": float64(3), "Tags": []any{"a"}}, m, "by the rethinkdb tag, numbers as float64")
	assert.True(t, got.At.Equal(at))
	got.At = at
	assert.Equal(t, payload{N: 3, At: at, Tags: []string{"a"}}, got)

	res := run(t, queue.HandlerFor(func(_ context.Context, _ *job.Job, p payload) (any, error) {
		return p.N, nil
	}), job.New(map[string]any{"n": "three"}, job.Options{}))
	assert.ErrorIs(t, res.Err, queue.ErrDecode, "HandlerFor fails a payload of the wrong shape")
}

func TestProgressAndLogsAreRecorded(t *testing.T) {
	var afterReports []float64
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		for _, p := range []float64{-5, 30, 150} {
			if err := j.UpdateProgress(ctx, p); err != nil {
				return nil, err
			}
			afterReports = append(afterReports, j.Progress)
		}
		if err := j.AddLog(ctx, nil, "", "", ""); err != nil {
			return nil, err
		}
		if err := j.AddLog(ctx, map[string]any{"rows": 7}, "imported", job.Warning, job.Failed); err != nil {
			return nil, err
		}
		return nil, nil
	}, job.New(nil, job.Options{}))
	assert.Equal(t, []float64{0, 30, 100}, res.Progress)
	assert.Equal(t, res.Progress, afterReports, "the handler's job is read back after each report")

	require.Len(t, res.Logs, 2)
	assert.Equal(t, job.MessageSeeLogData, res.Logs[0].Message)
	assert.Equal(t, job.Information, res.Logs[0].Type)
	assert.Equal(t, job.Active, res.Logs[0].Status)
	assert.Equal(t, map[string]any{}, res.Logs[0].Data)
	assert.Equal(t, "imported", res.Logs[1].Message)
	assert.Equal(t, job.Warning, res.Logs[1].Type)
	assert.Equal(t, job.Failed, res.Logs[1].Status)
	assert.Equal(t, map[string]any{"rows": 7}, res.Logs[1].Data)

	var progress []any
	var messages []string
	for _, e := range res.Job.Log {
		messages = append(messages, e.Message)
		if e.Message == job.MessageProgress {
			progress = append(progress, e.Data)
		}
	}
	assert.Equal(t, []string{job.MessageAdded, job.MessageActive, job.MessageProgress, job.MessageProgress,
		job.MessageProgress, job.MessageSeeLogData, "imported", job.MessageCompleted}, messages)
	assert.Equal(t, []any{float64(0), float64(0), float64(30)}, progress, "each entry holds the value it replaced")
}

func TestProgressMovesTheLease(t *testing.T) {
	var before, after time.Time
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		before = j.DateEnable
		err := j.UpdateProgress(ctx, 10)
		after = j.DateEnable
		return nil, err
	}, job.New(nil, job.Options{Timeout: 2 * time.Second}), rjqtest.WithQueueOptions(&queue.Options{Heartbeat: -1}))
	require.NoError(t, res.Err)
	// Heartbeats off: the lease is the original's, timeout + retryDelay × retryCount.
	assert.Equal(t, res.Job.DateStarted.Add(2*time.Second), before)
	assert.False(t, after.Before(before), "a report moves the lease from its own time")
	assert.Equal(t, after, res.Job.DateEnable, "completion leaves dateEnable where the last report put it")
}

func TestUpdateIsRecorded(t *testing.T) {
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		j.Data = "second"
		if err := j.Update(ctx); err != nil {
			return nil, err
		}
		return j.Data, nil
	}, job.New("first", job.Options{}))
	require.NoError(t, res.Err)
	require.Len(t, res.Updates, 1)
	assert.Equal(t, "second", res.Updates[0].Data)
	assert.Equal(t, job.Active, res.Updates[0].Status)
	assert.Equal(t, "second", res.Job.Data)
	assert.Equal(t, "second", res.Value)
	var updated *job.LogEntry
	for i := range res.Job.Log {
		if res.Job.Log[i].Message == job.MessageUpdated {
			updated = &res.Job.Log[i]
		}
	}
	require.NotNil(t, updated)
	assert.Equal(t, "first", updated.Data.(map[string]any)["data"])
	assert.Error(t, res.Job.Update(t.Context()), "the job of a Result is a record")
}

func TestTimeout(t *testing.T) {
	type after struct {
		cause         error
		progress, log error
	}
	seen := make(chan after, 1)
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		// Saves after the timeout find the job failed, as in a queue.
		seen <- after{context.Cause(ctx), j.UpdateProgress(context.Background(), 50), j.AddLog(context.Background(), nil, "late", "", "")}
		return "too late", nil
	}, job.New(nil, job.Options{Timeout: 30 * time.Millisecond, RetryMax: 1}))
	assert.Equal(t, rjqtest.Failed, res.Outcome)
	assert.ErrorIs(t, res.Err, job.ErrTimeout)
	assert.EqualError(t, res.Err, "Job timed out (run time > 30 ms)")
	assert.Nil(t, res.Value, "the run ended before the handler returned")
	assert.Equal(t, "Job timed out (run time > 30 ms)", res.Job.GetLastLog().ErrorMessage)
	a := <-seen
	assert.ErrorIs(t, a.cause, job.ErrTimeout)
	assert.ErrorIs(t, a.progress, job.ErrNotActive)
	assert.Error(t, a.log)
	assert.Empty(t, res.Logs)
}

func TestProgressRestartsTheTimeout(t *testing.T) {
	// Five steps of 150ms outlast a timeout of 500ms only because each report restarts it.
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		for i := 1; i <= 5; i++ {
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(150 * time.Millisecond): // the work of one step
			}
			if err := j.UpdateProgress(ctx, float64(20*i)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}, job.New(nil, job.Options{Timeout: 500 * time.Millisecond}))
	assert.Equal(t, rjqtest.Completed, res.Outcome, "%v", res.Err)
	assert.Len(t, res.Progress, 5)
}

func TestRunsUnderTheCallersContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	res, err := rjqtest.Run(ctx, func(ctx context.Context, _ *job.Job) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}, job.New(nil, job.Options{RetryMax: job.NoRetries}))
	require.NoError(t, err)
	assert.Equal(t, rjqtest.Terminated, res.Outcome)
	assert.ErrorIs(t, res.Err, context.Canceled)
}

func TestQueueOptions(t *testing.T) {
	var order []string
	mw := func(name string) queue.Middleware {
		return func(next queue.Handler) queue.Handler {
			return func(ctx context.Context, j *job.Job) (any, error) {
				order = append(order, name)
				return next(ctx, j)
			}
		}
	}
	opts := &queue.Options{
		Middleware:   []queue.Middleware{mw("outer"), mw("inner")},
		RetryBackoff: func(_ *job.Job, retry int) time.Duration { return time.Duration(retry) * 42 * time.Second },
		LimitJobLogs: 4,
	}
	res := run(t, func(ctx context.Context, j *job.Job) (any, error) {
		order = append(order, "handler")
		for range 5 {
			if err := j.AddLog(ctx, nil, "step", "", ""); err != nil {
				return nil, err
			}
		}
		return nil, errors.New("again")
	}, job.New(nil, job.Options{RetryMax: 1, RetryDelay: time.Minute}), rjqtest.WithQueueOptions(opts))
	assert.Equal(t, []string{"outer", "inner", "handler"}, order)
	assert.Equal(t, 42*time.Second, res.Job.DateEnable.Sub(res.Job.DateFinished))
	assert.Len(t, res.Job.Log, 4)
	assert.Len(t, res.Logs, 5, "every entry added is recorded, kept or not")
	var truncated bool
	for _, e := range res.Job.Log {
		truncated = truncated || e.Message == job.MessageLogsTruncated
	}
	assert.True(t, truncated)

	opts = &queue.Options{RetryBackoff: func(*job.Job, int) time.Duration { panic("no") }}
	res = run(t, returns(nil, errors.New("again")), job.New(nil, job.Options{RetryMax: 1, RetryDelay: time.Minute}),
		rjqtest.WithQueueOptions(opts))
	assert.Equal(t, time.Minute, res.Job.DateEnable.Sub(res.Job.DateFinished), "a RetryBackoff that panics gives the linear delay")
}

func TestRunRefuses(t *testing.T) {
	active := job.New(nil, job.Options{})
	active.Status = job.Active
	cases := []struct {
		name string
		h    queue.Handler
		j    *job.Job
		opts []rjqtest.Option
		is   error
	}{
		{"a nil handler", nil, job.New(nil, job.Options{}), nil, queue.ErrNilHandler},
		{"a nil job", returns(nil, nil), nil, nil, job.ErrInvalid},
		{"an invalid job", returns(nil, nil), job.New(nil, job.Options{}).SetPriority(7), nil, job.ErrInvalidPriority},
		{"an active job", returns(nil, nil), active, nil, nil},
		{"a nil middleware", returns(nil, nil), job.New(nil, job.Options{}),
			[]rjqtest.Option{rjqtest.WithQueueOptions(&queue.Options{Middleware: []queue.Middleware{nil}})}, queue.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := rjqtest.Run(t.Context(), c.h, c.j, c.opts...)
			require.Error(t, err)
			assert.Nil(t, res)
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
		})
	}
}
