package rjqtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// QueueID is the queue id Run stamps on the job and on the log entries it writes, where
// a queue stamps its own.
const QueueID = "rjqtest"

// Outcome is what the queue writes when a run ends.
type Outcome string

// The outcomes of a run. Each but PassedBack and Repeating is also the status the job is
// left in; those two leave it waiting.
const (
	// Completed: the handler returned a result and a nil error.
	Completed Outcome = "completed"
	// Failed: the run failed (an error, a panic, the timeout) and the job will be retried
	// after its retry delay.
	Failed Outcome = "failed"
	// Terminated: the run failed with no retries left, and the job does not repeat.
	Terminated Outcome = "terminated"
	// Cancelled: the handler returned an error that wraps job.ErrCancel.
	Cancelled Outcome = "cancelled"
	// PassedBack: the handler returned its job, or queue.ErrPassBack; the job is saved as
	// the handler left it, waiting.
	PassedBack Outcome = "passed back"
	// Repeating: a repeating job's run ended, by a success or a failure with no retries
	// left, and the job waits for its next repeat.
	Repeating Outcome = "repeating"
)

// Result is what Run saw a handler do and what the queue would have written.
type Result struct {
	// Outcome is what the queue writes for the run.
	Outcome Outcome
	// Value is the result the handler returned (nil when it panicked or the timeout
	// ended the run): for
	// a completed run, what the completion log entry holds and Job.Result decodes, unless
	// it cannot be stored (the entry's message then says why).
	Value any
	// Err is the error the run ended with: the handler's (a failure, a cancel,
	// queue.ErrPassBack), a *queue.PanicError when it panicked, one wrapping job.ErrTimeout
	// when its timeout passed, or, for a job passed back that is not valid, why. It is nil
	// for a completed run and for a job passed back by returning it.
	Err error
	// Progress holds each progress report the handler made, clamped to 0..100 as stored.
	Progress []float64
	// Logs holds the entries the handler added with Job.AddLog, as they were added to its
	// job (the data as given, defaults applied).
	Logs []job.LogEntry
	// Updates holds the job as each of the handler's Job.Update calls saved it.
	Updates []*job.Job
	// Job is the job as the queue would leave it: status, counters, dates, progress,
	// and the whole log, from the claim to the outcome's entry. Its values are in their
	// stored form, as Queue.GetJob would return them; Job.Result decodes its result.
	// Its saves return an error: it is a record of the run.
	Job *job.Job
}

// Option changes how Run runs a handler.
type Option func(*options)

type options struct {
	queue   *queue.Options
	parents map[string]any // WithParentResult's, by parent
}

// WithQueueOptions runs the handler as a queue made with o would: o.Middleware wraps
// it, the first outermost; o.RetryBackoff delays retries; o.LimitJobLogs caps the log;
// o.Heartbeat sets the lease a claim and a progress report give the job (its
// dateEnable). The other fields do not bear on one run.
func WithQueueOptions(o *queue.Options) Option {
	return func(opts *options) { opts.queue = o }
}

// settings are the queue options that bear on a run, with their defaults applied, and
// the parents' results given.
type settings struct {
	middleware     []queue.Middleware
	retryBackoff   func(*job.Job, int) time.Duration
	limitJobLogs   int
	heartbeatLease time.Duration
	parents        map[string]any
}

func newSettings(opts []Option) (settings, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	q := o.queue
	if q == nil {
		q = &queue.Options{}
	}
	s := settings{middleware: slices.Clone(q.Middleware), retryBackoff: q.RetryBackoff, limitJobLogs: q.LimitJobLogs,
		parents: o.parents}
	if s.limitJobLogs == 0 {
		s.limitJobLogs = queue.DefaultLimitJobLogs
	}
	hb := q.Heartbeat
	if hb == 0 {
		hb = queue.DefaultHeartbeat
	}
	if hb > 0 {
		s.heartbeatLease = processor.HeartbeatLease(hb)
	}
	for i, m := range s.middleware {
		if m == nil {
			return s, fmt.Errorf("%w: middleware %d is nil", queue.ErrInvalidOption, i)
		}
	}
	return s, nil
}

// Run runs h on j as a queue's worker would, without a database, and returns what
// happened. j is not changed: the handler gets a job of its own, claimed from a copy of j
// added to a table in memory (a job with status created is added first, as AddJob adds
// it; one due later runs at once). Its payload is in its stored form, as a queue's
// handler gets it: maps with float64 numbers in place of structs and integers, decoded
// by DataAs (and queue.HandlerFor) by the driver's rules. The handler's context derives
// from ctx and is cancelled with the cause job.ErrTimeout when the job's timeout passes
// (restarted by each progress report), as in a queue.
//
// A job with parents (job.SetDependsOn) and status created runs as a queue runs it once
// its parents completed: added blocked, released (the log says so) and claimed, carrying
// each parent's result, given by WithParentResult (none for a parent not given one).
//
// Run returns when the handler returns or the timeout passes, whichever comes first: a
// handler that ignores its context may run on, as it would in a queue, but what it saves
// from then on is not recorded. The error is for what a queue would refuse (a nil
// handler, a job AddJob would reject, with AddJob's error, a job that is active or
// finished, an invalid option, a result given for a job that is not a parent); the
// handler's own error is the Result's Err.
func Run(ctx context.Context, h queue.Handler, j *job.Job, opts ...Option) (*Result, error) {
	set, err := newSettings(opts)
	if err != nil {
		return nil, fmt.Errorf("rjqtest: %w", err)
	}
	if h == nil {
		return nil, fmt.Errorf("rjqtest: %w", queue.ErrNilHandler)
	}
	if err := checkJob(j, set); err != nil {
		return nil, fmt.Errorf("rjqtest: %w", err)
	}
	switch j.Status {
	case job.Created, job.Waiting, job.Failed:
	default:
		return nil, fmt.Errorf("rjqtest: job %s is %s: a queue runs waiting and failed jobs only", j.ID, j.Status)
	}
	for i := len(set.middleware) - 1; i >= 0; i-- {
		h = set.middleware[i](h)
	}
	rn, err := claim(set, j)
	if err != nil {
		return nil, err
	}
	return rn.run(ctx, h)
}

// checkJob refuses what a queue would: a job AddJob refuses (for a job with status
// created, which Run adds first), one that is not valid, and results given for jobs that
// are not its parents.
func checkJob(j *job.Job, set settings) error {
	if j == nil || j.Status != job.Created {
		if err := j.Validate(); err != nil {
			return err
		}
	} else if err := queue.CheckJobs(j); err != nil {
		return err
	}
	return checkParentResults(j, set.parents)
}

// run is one run of a handler on a claimed job.
type run struct {
	set settings
	st  *store
	// claimed is the job as claimed, which the outcome is made from, as in a queue:
	// the handler may change its own job meanwhile.
	claimed job.Job
	// job is the handler's job.
	job   *job.Job
	timer *time.Timer
	// settled is set by the first of the handler's return and the timeout.
	settled atomic.Bool
}

// ended is what a settled run gives Run.
type ended struct {
	res *Result
	err error
}

// claim adds j (when created) and claims it, as AddJob and a queue's claim write it.
func claim(set settings, j *job.Job) (*run, error) {
	in, err := storedJob(j)
	if err != nil {
		return nil, fmt.Errorf("rjqtest: job %s: %w", j.ID, err)
	}
	limit := set.limitJobLogs
	in.QueueID = QueueID
	added := in.Status == job.Created
	if added {
		in.Status = job.Waiting
		status, message := job.Waiting, job.MessageAdded
		if len(in.DependsOn()) > 0 {
			status, message = job.Blocked, job.MessageAddedBlocked
		}
		e := rdb.NewLog(in, QueueID, nil, message, job.Information, status)
		in.Log = rdb.AppendLog(in.Log, e, limit, rdb.TruncatedLog(in, QueueID, limit, status))
		if len(in.DependsOn()) > 0 {
			// Added blocked, then released by its parents' completions.
			e := rdb.NewLog(in, QueueID, nil, job.MessageReleased, job.Information, job.Waiting).WithoutData()
			in.Log = rdb.AppendLog(in.Log, e, limit, rdb.TruncatedLog(in, QueueID, limit, job.Waiting))
		}
	}
	if err := setParentResults(in, set.parents, added); err != nil {
		return nil, fmt.Errorf("rjqtest: job %s: %w", j.ID, err)
	}
	at := now()
	e := rdb.NewLog(in, QueueID, nil, job.MessageActive, job.Information, job.Active).WithoutData()
	e.Date = at
	claimed := *in
	claimed.Status, claimed.DateStarted, claimed.ProcessCount = job.Active, at, in.ProcessCount+1
	claimed.DateEnable = rdb.LeaseEnd(in, at, set.heartbeatLease)
	claimed.Log = rdb.AppendLog(slices.Clone(in.Log), e, limit, rdb.TruncatedLog(in, QueueID, limit, job.Active))

	st := &store{set: set}
	if err := st.store(&claimed); err != nil {
		return nil, fmt.Errorf("rjqtest: job %s: %w", j.ID, err)
	}
	return &run{set: set, st: st, claimed: *st.readBack(), job: st.readBack()}, nil
}

// run runs h and returns the outcome of the first of its return and the timeout.
func (rn *run) run(parent context.Context, h queue.Handler) (*Result, error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(context.Canceled)
	done := make(chan ended, 1)
	timeout := rn.claimed.Timeout
	rn.st.mu.Lock()
	// Set under the lock settle takes, so that a timeout of 0 finds it set.
	rn.timer = time.AfterFunc(timeout, func() {
		rn.settle(done, func() (*Result, error) {
			cancel(job.ErrTimeout)
			return rn.failed(processor.TimeoutError(timeout))
		})
	})
	rn.st.timeout = func() { rn.timer.Reset(timeout) }
	rn.st.mu.Unlock()
	go func() {
		result, err := call(ctx, h, rn.job)
		rn.settle(done, func() (*Result, error) {
			res, err := rn.finish(result, err)
			if res != nil {
				res.Value = result
			}
			return res, err
		})
	}()
	e := <-done
	return e.res, e.err
}

// call runs the handler, turning a panic into a *queue.PanicError as a queue does.
func call(ctx context.Context, h queue.Handler, j *job.Job) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &queue.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h(ctx, j)
}

// settle ends the run once: the first caller's end makes the outcome, the other does
// nothing. The store takes no more of the handler's saves from then on, as a queue's
// guarded writes find the job no longer active in the run.
func (rn *run) settle(done chan<- ended, end func() (*Result, error)) {
	if !rn.settled.CompareAndSwap(false, true) {
		return
	}
	rn.st.mu.Lock()
	rn.timer.Stop()
	rn.st.over = true
	rn.st.mu.Unlock()
	res, err := end()
	done <- ended{res, err}
}

// The rules below are those of internal/processor's executor (outcome.go), which are
// methods of a running processor; they are restated here on the same rdb policy.

// finish turns what the handler returned into the run's outcome.
func (rn *run) finish(result any, err error) (*Result, error) {
	switch {
	case err != nil && processor.IsNilPointer(err):
		// Its methods may not bear calling; the handler meant something, but not a success.
		return rn.failed(fmt.Errorf("handler returned a nil %T as its error", err))
	case err != nil:
		if reason, ok := processor.CancelReason(err); ok {
			return rn.cancelled(reason, err)
		}
		if errors.Is(err, queue.ErrPassBack) {
			return rn.passBack(err)
		}
		return rn.failed(err)
	case result == any(rn.job):
		return rn.passBack(nil)
	}
	return rn.completed(result)
}

// completed is a successful run: completed with progress 100, or waiting for the next
// repeat. A result that cannot be stored is left out of the entry, which says why (and
// the job's Result returns job.ErrResultNotStored).
func (rn *run) completed(result any) (*Result, error) {
	at := now()
	t := rdb.AfterSuccess(&rn.claimed, at)
	entry, _ := rdb.CompletionEntry(&rn.claimed, QueueID, result, t, runTime(rn.claimed, at))
	outcome := Completed
	if t.Repeating {
		outcome = Repeating
	}
	return rn.write(t, entry, at, outcome, nil)
}

// failed is a failed run: failed for a retry, waiting for the next repeat, or terminated.
func (rn *run) failed(err error) (*Result, error) {
	at := now()
	t := rdb.AfterFailure(&rn.claimed, at, rn.customDelay())
	claimed := rn.claimed
	claimed.RetryCount = t.RetryCount
	message, stack := processor.ErrorText(err), job.MessageNoErrorStack
	var pe *queue.PanicError
	if errors.As(err, &pe) {
		stack = string(pe.Stack)
	}
	if message == "" {
		message = job.MessageNoErrorMsg
	}
	data := map[string]any{"name": processor.ErrorName(err), "message": message}
	entry := rdb.NewLog(&claimed, QueueID, data, job.MessageFailed, t.LogType, t.Status).
		WithDuration(runTime(rn.claimed, at)).WithError(message, stack)
	outcome := Terminated
	switch {
	case t.Retry:
		outcome = Failed
	case t.Repeating:
		outcome = Repeating
	}
	return rn.write(t, entry, at, outcome, err)
}

// write applies the transition t to the stored job, as a queue's outcome write does:
// dateEnable and retryCount only where they differ from the claim's.
func (rn *run) write(t rdb.Transition, entry job.LogEntry, at time.Time, outcome Outcome, err error) (*Result, error) {
	limit := rn.set.limitJobLogs
	res, werr := rn.st.end(func(s *job.Job) error {
		s.Status, s.DateFinished, s.QueueID, s.Progress = t.Status, at, QueueID, t.Progress
		if !t.DateEnable.Equal(rn.claimed.DateEnable) {
			s.DateEnable = t.DateEnable
		}
		if t.RetryCount != rn.claimed.RetryCount {
			s.RetryCount = t.RetryCount
		}
		s.Log = rdb.AppendLog(s.Log, entry, limit, rdb.TruncatedLog(&rn.claimed, QueueID, limit, t.Status))
		return nil
	})
	if werr != nil {
		return nil, werr
	}
	res.Outcome, res.Err = outcome, err
	return res, nil
}

// cancelled is a run whose handler returned an error wrapping job.ErrCancel.
func (rn *run) cancelled(reason string, err error) (*Result, error) {
	at := now()
	limit := rn.set.limitJobLogs
	entry := rdb.NewLog(&rn.claimed, QueueID, nil, reason, job.Information, job.Cancelled).WithoutData()
	entry.Date = at
	res, werr := rn.st.end(func(s *job.Job) error {
		s.Status, s.DateFinished, s.QueueID = job.Cancelled, at, QueueID
		s.Log = rdb.AppendLog(s.Log, entry, limit, rdb.TruncatedLog(&rn.claimed, QueueID, limit, job.Cancelled))
		return nil
	})
	if werr != nil {
		return nil, werr
	}
	res.Outcome, res.Err = Cancelled, err
	return res, nil
}

// passBack saves the job as its handler left it, active turned into waiting; a job that
// is not valid fails instead, with the reason.
func (rn *run) passBack(err error) (*Result, error) {
	j := rn.job
	if j.Status == job.Active {
		j.Status = job.Waiting
	}
	if verr := j.Validate(); verr != nil {
		return rn.failed(fmt.Errorf("the job passed back is not valid: %w", verr))
	}
	j.Log = append(j.Log, rdb.NewLog(j, QueueID, map[string]any{}, job.MessagePassBack, job.Information, ""))
	res, werr := rn.st.end(func(*job.Job) error { return rn.st.replace(j) })
	if werr != nil {
		return nil, werr
	}
	res.Outcome, res.Err = PassedBack, err
	return res, nil
}

// customDelay is the queue's retry delay made safe to call, as a queue calls it: a
// panic in it gives the linear delay.
func (rn *run) customDelay() rdb.CustomDelay {
	f := rn.set.retryBackoff
	if f == nil {
		return nil
	}
	return func(j *job.Job, n int) (d time.Duration) {
		defer func() {
			if recover() != nil {
				d = time.Duration(n) * j.RetryDelay
			}
		}()
		return f(j, n)
	}
}

// now is the time an outcome is stamped with, as the database keeps it.
func now() time.Time { return docfmt.Millis(time.Now()) }

// runTime is how long the run of j that ends at at took.
func runTime(j job.Job, at time.Time) time.Duration { return max(at.Sub(j.DateStarted), 0) }
