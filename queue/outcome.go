package queue

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// finish records what the handler returned.
func (p *processor) finish(rn *run, result any, err error) {
	switch {
	case err != nil && isNilPointer(err):
		// (nil, (*MyErr)(nil)) is a non-nil error whose methods may not bear calling; the
		// handler meant something, but not a success it never returned.
		p.failed(rn, fmt.Errorf("handler returned a nil %T as its error", err))
	case err != nil:
		if reason, ok := cancelReason(err); ok {
			p.cancelledByHandler(rn, reason)
			return
		}
		if errors.Is(err, ErrPassBack) {
			p.passBack(rn)
			return
		}
		p.failed(rn, err)
	case result == any(rn.job):
		p.passBack(rn)
	default:
		p.completed(rn, result)
	}
}

// isNilPointer reports whether v holds a nil pointer, map, slice, func or chan.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// outcome is a run's result, waiting to be written by the processing loop together with
// the other outcomes that finish meanwhile (see commit.go).
type outcome struct {
	rn *run
	// set holds the top-level fields the write sets; the log entry is appended to the log.
	set   map[string]any
	entry map[string]any
	trunc map[string]any
	// stamp is the outcome's dateFinished, by which a write whose answer was lost is
	// recognized as this outcome's.
	stamp time.Time
	// event is raised once the write lands, with err, the handler's error of a failed run.
	event EventType
	err   error
	// terminated is the job as it ended, for Options.OnTerminated, when it ended terminated.
	terminated *job.Job
	repeating  bool
	// finished is true when the job ends in a finished status.
	finished bool
	// tries counts writes of this outcome that failed; after one, the outcome may be in
	// the database already.
	tries int
}

// completed records a successful run: completed with progress 100, or waiting for the next
// repeat. A result that cannot be stored is left out of the log entry, which says why.
func (p *processor) completed(rn *run, result any) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := rdb.AfterSuccess(&rn.claimed, now)
	message := job.MessageCompleted
	if err := job.CheckValue(result); err != nil {
		p.q.log.WarnContext(rn.ctx, "a handler's result cannot be stored; the job completes without it", "job", rn.claimed.ID, "err", err)
		result, message = nil, job.MessageCompleted+" (its result was not stored: "+err.Error()+")"
	}
	entry := rdb.WithDuration(rdb.NewLog(&rn.claimed, p.q.id, result, message, t.LogType, t.Status),
		runTime(rn.claimed, now))
	event := EventCompleted
	p.enqueue(p.transition(rn, t, entry, now, event))
}

// failed records a failed run: failed for a retry, waiting for the next repeat, or
// terminated.
func (p *processor) failed(rn *run, err error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := rdb.AfterFailure(&rn.claimed, now, p.customDelay())
	claimed := rn.claimed
	claimed.RetryCount = t.RetryCount
	message, stack := errorText(err), job.MessageNoErrorStack
	var pe *PanicError
	if errors.As(err, &pe) {
		stack = string(pe.Stack)
	}
	if message == "" {
		message = job.MessageNoErrorMsg
	}
	data := map[string]any{"name": errorName(err), "message": message}
	entry := rdb.WithError(rdb.WithDuration(rdb.NewLog(&claimed, p.q.id, data, job.MessageFailed, t.LogType, t.Status),
		runTime(rn.claimed, now)), message, stack)
	p.q.log.InfoContext(rn.ctx, "job failed", "job", rn.claimed.ID, "err", message, "status", t.Status)
	event := EventTerminated
	if t.Retry || t.Repeating {
		event = EventFailed
	}
	o := p.transition(rn, t, entry, now, event)
	o.err = err
	if t.Status == job.Terminated && p.q.cfg.onTerminated != nil {
		ended := claimed
		ended.Status, ended.DateFinished, ended.Progress, ended.QueueID = t.Status, now, t.Progress, p.q.id
		ended.Log = append(slices.Clone(claimed.Log), entry)
		o.terminated = &ended
	}
	p.enqueue(o)
}

// transition is the outcome that applies t to the run's job.
func (p *processor) transition(rn *run, t rdb.Transition, entry job.LogEntry, now time.Time, event EventType) *outcome {
	return &outcome{
		rn: rn,
		set: map[string]any{
			"status":       string(t.Status),
			"dateEnable":   t.DateEnable,
			"dateFinished": now,
			"retryCount":   t.RetryCount,
			"progress":     t.Progress,
			"queueId":      p.q.id,
		},
		entry:     rdb.LogDocument(entry),
		trunc:     rdb.LogDocument(rdb.TruncatedLog(&rn.claimed, p.q.id, p.q.cfg.limitJobLogs, t.Status)),
		stamp:     now,
		event:     event,
		repeating: t.Repeating,
		finished:  t.Status.Finished(),
	}
}

// cancelledByHandler cancels a job whose handler returned job.Cancel(reason).
func (p *processor) cancelledByHandler(rn *run, reason string) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	entry := rdb.WithoutData(rdb.NewLog(&rn.claimed, p.q.id, nil, reason, job.Information, job.Cancelled))
	entry.Date = now
	p.enqueue(&outcome{
		rn: rn,
		set: map[string]any{
			"status":       string(job.Cancelled),
			"dateFinished": now,
			"queueId":      p.q.id,
		},
		entry:    rdb.LogDocument(entry),
		trunc:    rdb.LogDocument(rdb.TruncatedLog(&rn.claimed, p.q.id, p.q.cfg.limitJobLogs, job.Cancelled)),
		stamp:    now,
		event:    EventCancelled,
		finished: true,
	})
}

// errorText is err's message; an Error method that panics (a method on a nil receiver,
// say) gives a message that says so instead of taking the process down.
func errorText(err error) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprintf("%T.Error() panicked: %v", err, v)
		}
	}()
	return err.Error()
}

// errorName names an error's type, as the original's serialized errors carry a name.
func errorName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return "Error"
	}
	return t.String()
}

func runTime(j job.Job, now time.Time) time.Duration {
	return max(now.Sub(j.DateStarted), 0)
}

// passBack saves a job its handler returned unfinished, back to waiting. The job is
// checked as Job.Update checks it; an invalid one fails instead, with the reason.
func (p *processor) passBack(rn *run) {
	q, j := p.q, rn.job
	if j.Status == job.Active {
		j.Status = job.Waiting
	}
	if err := j.Validate(); err != nil {
		p.failed(rn, fmt.Errorf("the job passed back is not valid: %w", err))
		return
	}
	j.Log = append(j.Log, rdb.NewLog(j, q.id, map[string]any{}, job.MessagePassBack, job.Information, ""))
	e := rdb.NewLog(j, q.id, nil, job.MessageUpdated, job.Information, "")
	switch err := q.updateJob(p.hard, j, e, rn.claimed.ProcessCount); {
	case errors.Is(err, errNotOwned):
		q.log.Info("job changed elsewhere while it ran; it is not passed back", "job", j.ID)
	case err != nil:
		q.emit(Event{Type: EventError, JobID: j.ID, Err: err})
	default:
		q.runMetric(rn.claimed, job.Waiting, time.Now())
	}
}

// terminatedHook calls Options.OnTerminated for a job that ended terminated. It runs in a
// goroutine of its own, owned by the processor (Stop waits for it), and a hook that panics
// is logged instead of taking the process down.
func (p *processor) terminatedHook(j *job.Job, err error) {
	p.handlers.Add(1)
	go func() {
		defer p.handlers.Done()
		defer func() {
			if v := recover(); v != nil {
				p.q.log.Error("Options.OnTerminated panicked", "job", j.ID, "panic", v)
			}
		}()
		p.q.cfg.onTerminated(j, err)
	}()
}

// cancelReason returns the log message of a handler's cancel when err is one: the reason
// given to job.Cancel, or the original's message for an error that only wraps job.ErrCancel.
func cancelReason(err error) (reason string, ok bool) {
	var c interface{ CancelReason() string }
	if errors.As(err, &c) {
		return c.CancelReason(), true
	}
	if errors.Is(err, job.ErrCancel) {
		return job.MessageCancel, true
	}
	return "", false
}

// customDelay is Options.RetryBackoff made safe to call from the processing loop: a panic
// in it gives the linear delay and is logged.
func (p *processor) customDelay() rdb.CustomDelay {
	f := p.q.cfg.retryBackoff
	if f == nil {
		return nil
	}
	return func(j *job.Job, n int) (d time.Duration) {
		defer func() {
			if v := recover(); v != nil {
				p.q.log.Error("Options.RetryBackoff panicked; the linear delay is used", "job", j.ID, "panic", v)
				d = time.Duration(n) * j.RetryDelay
			}
		}()
		return f(j, n)
	}
}
