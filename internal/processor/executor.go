package processor

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The executor runs each claimed job in a goroutine of its own, with a context that ends
// on the job's timeout, on a cancel seen elsewhere and when Stop gives up waiting. A run
// settles once, at the first of its handler's return, its timeout and a cancel: its slot
// is then free and its outcome (if any) goes to the completer.

// executor runs claimed jobs.
type executor struct {
	p *Processor

	mu   sync.Mutex
	runs map[*run]struct{}
	// handlers counts handler goroutines, which may outlive their run (a handler that
	// ignores its cancelled context), and the goroutines that write coalesced progress
	// and call the Terminated hook: Stop waits for them all.
	handlers sync.WaitGroup
}

// run is one claimed job being processed.
type run struct {
	job *job.Job
	// claimed is the job as claimed, for the outcome: the handler may change job meanwhile.
	claimed job.Job
	// ctx is the handler's context; log records about the run carry it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	// settled is set by the first of handler return, timeout and cancel; the others then
	// do nothing (a handler that cancels its own job reaches settle twice).
	settled atomic.Bool
	// progress throttles the run's progress writes (see progress.go).
	progress progressState
	// leaseEnd is when the run's lease ends (unix nanoseconds): from its claim, then from
	// each renewal that included it. Its outcome must be written before then, or a Queue
	// Master takes the run for a dead one.
	leaseEnd atomic.Int64
}

// leaseLeft is how long the run's lease lasts from now (negative when it has ended).
func (rn *run) leaseLeft(now time.Time) time.Duration {
	return time.Duration(rn.leaseEnd.Load() - now.UnixNano())
}

func newExecutor(p *Processor) *executor {
	return &executor{p: p, runs: make(map[*run]struct{})}
}

// start runs the handler on a claimed job, with its timeout.
func (e *executor) start(j *job.Job) {
	p := e.p
	ctx, cancel := context.WithCancelCause(p.cfg.HandlerContext())
	// A Stop that gives up waiting cuts the handler off with Stop's cause.
	unlink := context.AfterFunc(p.hard, func() { cancel(context.Cause(p.hard)) })
	rn := &run{job: j, claimed: *j, ctx: ctx, cancel: cancel}
	rn.leaseEnd.Store(j.DateEnable.UnixNano()) // the claim wrote the lease's end there
	e.mu.Lock()
	e.runs[rn] = struct{}{}
	// Set under the lock that settle takes first, so a timeout of 0 finds it set.
	rn.timer = time.AfterFunc(j.Timeout, func() { e.timeout(rn) })
	e.mu.Unlock()
	p.act.update(func(a *activity) { a.running++ })
	p.emit(Event{Type: EventProcessing, JobID: j.ID})
	e.handlers.Add(1)
	go func() {
		defer e.handlers.Done()
		defer unlink()
		result, err := e.call(ctx, j)
		if p.hard.Err() != nil && context.Cause(ctx) == context.Cause(p.hard) && stoppedShort(rn, result, err) {
			// Cut off by a Stop that gave up waiting: not the job's failure. The job goes
			// back to waiting, with no retry spent (Stop writes it, see handBack).
			e.settle(rn, func() *outcome { return e.handedBack(rn) })
			return
		}
		e.settle(rn, func() *outcome { return e.finish(rn, result, err) })
	}()
}

// call runs the handler, turning a panic into a *PanicError.
func (e *executor) call(ctx context.Context, j *job.Job) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return e.p.cfg.Handler(ctx, j)
}

// settle ends a run once, whichever comes first: the handler's return, the timeout, or a
// cancel. end, when not nil, makes the run's outcome (nil: nothing to write); it goes to
// the completer in the same step that frees the run's slot, so that Pause and Stop, which
// wait for both, never see neither.
func (e *executor) settle(rn *run, end func() *outcome) {
	if !rn.settled.CompareAndSwap(false, true) {
		return
	}
	e.mu.Lock()
	rn.timer.Stop()
	e.mu.Unlock()
	rn.progress.stop()
	var o *outcome
	if end != nil {
		o = end()
	}
	rn.cancel(context.Canceled)
	e.mu.Lock()
	delete(e.runs, rn)
	e.mu.Unlock()
	hold := e.hold(o)
	e.p.act.update(func(a *activity) {
		a.running--
		if o != nil {
			a.pending++
		}
		if hold {
			// Handed from the run to its children, without a moment free between.
			a.reserved++
			o.held = 1
		}
	})
	if o != nil {
		e.p.comp.add(o)
	}
	if !hold {
		e.p.prod.slotFreed()
	}
}

// hold reads the children of the run whose outcome is o, when it completed its job, and
// reports whether the run's slot stays reserved for those the outcome's write may claim
// (completer.follow): a job that lists children, on a queue that claims from its
// changefeed. Without it, the slot freed at the handler's return starts a claim's read,
// which the outcome's write then waits for (on RethinkDB 2.4.4, about half a
// millisecond of each hop of a chain).
func (e *executor) hold(o *outcome) bool {
	p := e.p
	if o == nil || o.event != EventCompleted || o.repeating || p.cfg.Children == nil {
		return false
	}
	o.children = p.cfg.Children(&o.rn.claimed)
	return p.cfg.Feed && len(o.children) > 0
}

// timeout fails a run whose timeout passed, at that moment; not once Stop has cut the
// runs off: the run is then handed back if its handler returns in time, else left to its
// lease, and no retry is spent for the stop.
func (e *executor) timeout(rn *run) {
	if e.p.hard.Err() != nil {
		return
	}
	e.settle(rn, func() *outcome {
		rn.cancel(job.ErrTimeout)
		return e.failed(rn, TimeoutError(rn.claimed.Timeout))
	})
}

// disown ends the runs of job id of the claims up to upTo, with cause.
func (e *executor) disown(id string, upTo int, cause error) {
	for _, rn := range e.runsOf(id) {
		if rn.claimed.ProcessCount <= upTo {
			e.settle(rn, func() *outcome { rn.cancel(cause); return nil })
		}
	}
}

// runsOf returns the runs of the job id: one, but for a moment two when the job was
// claimed again while its previous run was being settled.
func (e *executor) runsOf(id string) []*run {
	e.mu.Lock()
	defer e.mu.Unlock()
	var runs []*run
	for rn := range e.runs {
		if rn.claimed.ID == id {
			runs = append(runs, rn)
		}
	}
	return runs
}

// runOf returns the run of job id that made the processCount'th claim, if it runs here.
func (e *executor) runOf(id string, processCount int) *run {
	e.mu.Lock()
	defer e.mu.Unlock()
	for rn := range e.runs {
		if rn.claimed.ID == id && rn.claimed.ProcessCount == processCount {
			return rn
		}
	}
	return nil
}

// touched restarts the timeout of the run of job id that made the processCount'th claim.
func (e *executor) touched(id string, processCount int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for rn := range e.runs {
		if rn.claimed.ID == id && rn.claimed.ProcessCount == processCount {
			rn.timer.Reset(rn.claimed.Timeout)
		}
	}
}

// count returns how many jobs run.
func (e *executor) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.runs)
}

// running returns the runs' jobs: id → the processCount of their claim.
func (e *executor) running() map[string]int { return e.startedBefore(time.Time{}) }

// startedBefore returns the jobs of the runs claimed before t (all when t is zero): id →
// the processCount of their claim.
func (e *executor) startedBefore(t time.Time) map[string]int {
	out := make(map[string]int)
	for _, rn := range e.runsStartedBefore(t) {
		out[rn.claimed.ID] = rn.claimed.ProcessCount
	}
	return out
}

// runsStartedBefore returns the runs claimed before t (all of them for the zero t).
func (e *executor) runsStartedBefore(t time.Time) []*run {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*run
	for rn := range e.runs {
		if t.IsZero() || rn.claimed.DateStarted.Before(t) {
			out = append(out, rn)
		}
	}
	return out
}

// dropDisowned ends the runs whose jobs are no longer theirs in the database.
func (e *executor) dropDisowned(ctx context.Context) error {
	e.mu.Lock()
	runs := make([]*run, 0, len(e.runs))
	ids := make([]string, 0, len(e.runs))
	for rn := range e.runs {
		runs = append(runs, rn)
		ids = append(ids, rn.claimed.ID)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	stamps, err := e.p.cfg.Store.ReadStamps(ctx, ids)
	if err != nil {
		return err
	}
	for _, rn := range runs {
		if d, ok := stamps[rn.claimed.ID]; !ok || d.Status != string(job.Active) || int(d.ProcessCount) != rn.claimed.ProcessCount {
			e.settle(rn, func() *outcome { rn.cancel(job.ErrCancelled); return nil })
		}
	}
	return nil
}

// TimeoutError is the error a run of a job whose timeout is d fails with when the timeout
// passes; it wraps job.ErrTimeout.
func TimeoutError(d time.Duration) error { return timeoutError(d) }

// timeoutError is the error a job fails with when its timeout passes, worded as the
// original's so that logs read the same.
type timeoutError time.Duration

func (e timeoutError) Error() string {
	return fmt.Sprintf("Job timed out (run time > %d ms)", time.Duration(e).Milliseconds())
}

func (e timeoutError) Is(target error) bool { return target == job.ErrTimeout }

// PanicError is the error a job fails with when its handler panics.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
	// Stack is the handler goroutine's stack at the panic.
	Stack []byte
}

// Error says that the handler panicked, and with what.
func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, for errors.Is and errors.As.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
