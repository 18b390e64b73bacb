package processor

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// ErrPassBack, returned by a handler as its error, passes the job back (queue.ErrPassBack).
var ErrPassBack = errors.New("queue: job passed back by its handler")

// ErrNotOwned reports a write for a run that found the job changed by another party
// (cancelled, recovered by a review, claimed again), which it leaves alone.
var ErrNotOwned = errors.New("the job changed elsewhere while it ran")

// outcome is a run's result, waiting for the completer to write it.
type outcome struct {
	rn    *run
	write rdb.Outcome
	// event is raised once the write lands, with err, the handler's error of a failed run.
	event     string
	err       error
	reason    string // a cancel's, for its event
	repeating bool
	// terminated is the job as it ended, for the Terminated hook, when it ended terminated.
	terminated *job.Job
	// finished is true when the job ends in a finished status.
	finished bool
	// tries counts writes of this outcome that failed; after one, the outcome may be in
	// the database already.
	tries int
	// claimed are the children that the outcome's write released and claimed here (see
	// completer.follow).
	claimed []*job.Job
	// children are the children its job lists, read once when a completed run ends (see
	// executor.hold), for the slot's hand-over and the write that follows them.
	children []string
	// held is the run's slot, kept reserved for its children when its run ended (see
	// executor.hold): 1 or 0.
	held int
	// handedBack is set on the outcome of a run that Stop cut off short (handedBack): it
	// raises no event.
	handedBack bool
}

// finish turns what the handler returned into the run's outcome: nil when there is
// nothing for the completer to write (a pass-back is written here).
func (e *executor) finish(rn *run, result any, err error) *outcome {
	switch {
	case err != nil && IsNilPointer(err):
		// (nil, (*MyErr)(nil)) is a non-nil error whose methods may not bear calling; the
		// handler meant something, but not a success it never returned.
		return e.failed(rn, fmt.Errorf("handler returned a nil %T as its error", err))
	case err != nil:
		if reason, ok := CancelReason(err); ok {
			return e.cancelled(rn, reason)
		}
		if errors.Is(err, ErrPassBack) {
			return e.passBack(rn)
		}
		return e.failed(rn, err)
	case result == any(rn.job):
		return e.passBack(rn)
	}
	return e.completed(rn, result)
}

// IsNilPointer reports whether v holds a nil pointer, map, slice, func or chan.
func IsNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// now is the time an outcome is stamped with, as the database keeps it.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// completed is a successful run: completed with progress 100, or waiting for the next
// repeat. A result that cannot be stored is left out of the log entry, which says why.
func (e *executor) completed(rn *run, result any) *outcome {
	p, at := e.p, now()
	t := rdb.AfterSuccess(&rn.claimed, at)
	entry, err := rdb.CompletionEntry(&rn.claimed, p.cfg.QueueID, result, t, runTime(rn.claimed, at))
	if err != nil {
		p.cfg.Log.WarnContext(rn.ctx, "a handler's result cannot be stored: the job completes without it, and its Result reports why", "job", rn.claimed.ID, "err", err)
	}
	return e.transition(rn, t, entry, at, EventCompleted)
}

// failed is a failed run: failed for a retry, waiting for the next repeat, or terminated.
func (e *executor) failed(rn *run, err error) *outcome {
	p, at := e.p, now()
	t := rdb.AfterFailure(&rn.claimed, at, e.customDelay())
	claimed := rn.claimed
	claimed.RetryCount = t.RetryCount
	message, stack := ErrorText(err), job.MessageNoErrorStack
	var pe *PanicError
	if errors.As(err, &pe) {
		stack = string(pe.Stack)
	}
	if message == "" {
		message = job.MessageNoErrorMsg
	}
	data := map[string]any{"name": ErrorName(err), "message": message}
	entry := rdb.NewLog(&claimed, p.cfg.QueueID, data, job.MessageFailed, t.LogType, t.Status).
		WithDuration(runTime(rn.claimed, at)).WithError(message, stack)
	event := EventTerminated
	if t.Retry || t.Repeating {
		event = EventFailed
		p.cfg.Log.WarnContext(rn.ctx, "job failed; it will run again", "job", rn.claimed.ID, "err", message, "status", t.Status, "retryCount", t.RetryCount)
	} else {
		p.cfg.Log.ErrorContext(rn.ctx, "job terminated: it failed and will not run again", "job", rn.claimed.ID, "err", message, "retryCount", t.RetryCount)
	}
	o := e.transition(rn, t, entry, at, event)
	o.err = err
	if t.Status == job.Terminated && p.cfg.Hooks.Terminated != nil {
		ended := claimed
		ended.Status, ended.DateFinished, ended.Progress, ended.QueueID = t.Status, at, t.Progress, p.cfg.QueueID
		ended.Log = append(slices.Clone(claimed.Log), entry)
		o.terminated = &ended
	}
	return o
}

// transition is the outcome that applies t to the run's job.
func (e *executor) transition(rn *run, t rdb.Transition, entry job.LogEntry, at time.Time, event string) *outcome {
	enable, retries, progress := t.DateEnable, t.RetryCount, t.Progress
	w := rdb.Outcome{
		ID: rn.claimed.ID, ProcessCount: rn.claimed.ProcessCount,
		Status: t.Status, DateFinished: at, Progress: &progress,
		Entry:  entry,
		Trunc:  rdb.TruncatedLog(&rn.claimed, e.p.cfg.QueueID, e.p.cfg.LimitJobLogs, t.Status),
		LogLen: len(rn.claimed.Log),
	}
	// Only what changes is written: the fewer values outcomes differ in, the more of
	// them share one update (see rdb.Table.Finish).
	if !enable.Equal(rn.claimed.DateEnable) {
		w.DateEnable = &enable
	}
	if retries != rn.claimed.RetryCount {
		w.RetryCount = &retries
	}
	return &outcome{
		rn:        rn,
		write:     w,
		event:     event,
		repeating: t.Repeating,
		finished:  t.Status.Finished(),
	}
}

// cancelled is a run whose handler returned job.Cancel(reason).
func (e *executor) cancelled(rn *run, reason string) *outcome {
	at := now()
	entry := rdb.NewLog(&rn.claimed, e.p.cfg.QueueID, nil, reason, job.Information, job.Cancelled).WithoutData()
	entry.Date = at
	return &outcome{
		rn: rn,
		write: rdb.Outcome{
			ID: rn.claimed.ID, ProcessCount: rn.claimed.ProcessCount,
			Status: job.Cancelled, DateFinished: at,
			Entry:  entry,
			Trunc:  rdb.TruncatedLog(&rn.claimed, e.p.cfg.QueueID, e.p.cfg.LimitJobLogs, job.Cancelled),
			LogLen: len(rn.claimed.Log),
		},
		event:    EventCancelled,
		reason:   reason,
		finished: true,
	}
}

// passBack saves a job its handler returned unfinished, back to waiting, here and now. The
// job is checked as Job.Update checks it; an invalid one fails instead, with the reason.
func (e *executor) passBack(rn *run) *outcome {
	p, j := e.p, rn.job
	if j.Status == job.Active {
		j.Status = job.Waiting
	}
	if err := j.Validate(); err != nil {
		return e.failed(rn, fmt.Errorf("the job passed back is not valid: %w", err))
	}
	j.Log = append(j.Log, rdb.NewLog(j, p.cfg.QueueID, map[string]any{}, job.MessagePassBack, job.Information, ""))
	switch err := p.cfg.PassBack(p.hard, j, rn.claimed.ProcessCount); {
	case errors.Is(err, ErrNotOwned):
		p.cfg.Log.Info("job changed elsewhere while it ran; it is not passed back", "job", j.ID)
	case err != nil:
		p.emit(Event{Type: EventError, JobID: j.ID, Err: err})
	default:
		if p.cfg.Hooks.RunEnded != nil {
			p.cfg.Hooks.RunEnded(rn.claimed, job.Waiting, time.Now())
		}
	}
	return nil
}

// ErrorText is err's message; an Error method that panics (a method on a nil receiver,
// say) gives a message that says so instead of taking the process down.
func ErrorText(err error) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprintf("%T.Error() panicked: %v", err, v)
		}
	}()
	return err.Error()
}

// ErrorName names an error's type, as the original's serialized errors carry a name.
func ErrorName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return "Error"
	}
	return t.String()
}

// runTime is how long the run of j that ends at at took.
func runTime(j job.Job, at time.Time) time.Duration {
	return max(at.Sub(j.DateStarted), 0)
}

// CancelReason returns the log message of a handler's cancel when err is one: the reason
// given to job.Cancel, or the original's message for an error that only wraps job.ErrCancel.
func CancelReason(err error) (reason string, ok bool) {
	var c interface{ CancelReason() string }
	if errors.As(err, &c) {
		return c.CancelReason(), true
	}
	if errors.Is(err, job.ErrCancel) {
		return job.MessageCancel, true
	}
	return "", false
}

// customDelay is the queue's retry delay made safe to call: a panic in it gives the
// linear delay and is logged.
func (e *executor) customDelay() rdb.CustomDelay {
	f := e.p.cfg.RetryDelay
	if f == nil {
		return nil
	}
	return func(j *job.Job, n int) (d time.Duration) {
		defer func() {
			if v := recover(); v != nil {
				e.p.cfg.Log.Error("Options.RetryBackoff panicked; the linear delay is used", "job", j.ID, "panic", v)
				d = time.Duration(n) * j.RetryDelay
			}
		}()
		return f(j, n)
	}
}

// stoppedShort reports whether a run that Stop cut off ended short: its handler returned
// an error (most often the context's) or passed the job back. A handler that completed
// its job or cancelled it meanwhile ended on its own, and that outcome is written.
func stoppedShort(rn *run, result any, err error) bool {
	if err == nil {
		return result == any(rn.job)
	}
	_, cancelled := CancelReason(err)
	return !cancelled
}

// handedBack is a run that Stop cut off short: its job goes back to waiting as it was
// claimed, with no retry spent and its progress kept, due again from its claim's time,
// so that it keeps its place before the jobs that fell due since.
func (e *executor) handedBack(rn *run) *outcome {
	at := now()
	entry := rdb.NewLog(&rn.claimed, e.p.cfg.QueueID, nil, job.MessageWorkerStopped, job.Warning, job.Waiting).WithoutData()
	entry.Date = at
	enable := rn.claimed.DateStarted
	if enable.IsZero() || enable.After(at) {
		enable = at
	}
	return &outcome{
		rn: rn,
		write: rdb.Outcome{
			ID: rn.claimed.ID, ProcessCount: rn.claimed.ProcessCount,
			Status: job.Waiting, DateFinished: at, DateEnable: &enable,
			Entry:  entry,
			Trunc:  rdb.TruncatedLog(&rn.claimed, e.p.cfg.QueueID, e.p.cfg.LimitJobLogs, job.Waiting),
			LogLen: len(rn.claimed.Log),
		},
		handedBack: true,
	}
}
