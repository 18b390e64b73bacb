package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Handler processes one job and returns its outcome, the Go form of the original's
// next(err, result):
//   - (result, nil): the job is completed (or waits for its next repeat); result is the data
//     of the completion log entry;
//   - (nil, err): the job failed and is retried per its RetryMax and RetryDelay, else
//     terminated (or waits for its next repeat);
//   - an error for which errors.Is(err, job.ErrCancel) holds (make one with job.Cancel):
//     the job is cancelled with that reason;
//   - (j, nil), returning the job it was given: the job is passed back, saved as it is
//     with status active turned into waiting.
//
// ctx is cancelled when the job is cancelled or taken away anywhere (cause
// job.ErrCancelled: cancelled, removed, or failed by a review, here or in another process;
// learned from the changefeed, so with the feed off only for changes made by this queue),
// when its timeout passes (cause job.ErrTimeout; the job has been failed by then) and when
// Stop gives up waiting (cause ErrStopped); context.Cause(ctx) tells which. Once that happens,
// the handler's return value is ignored. A handler that panics fails its job with the
// panic as the error (a *PanicError); the queue keeps running.
type Handler func(ctx context.Context, j *job.Job) (result any, err error)

// Errors of Process.
var (
	// ErrProcessTwice is returned by a second call of Process: a queue has one handler.
	ErrProcessTwice = errors.New("queue: Process called twice: a queue has one handler")
	// ErrNilHandler is returned by Process given a nil handler.
	ErrNilHandler = fmt.Errorf("%w: nil handler", job.ErrInvalid)
)

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

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, for errors.Is and errors.As.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// maxClaimBackoff bounds the wait between claims that fail (database unreachable, say).
const maxClaimBackoff = 30 * time.Second

// processor runs the queue's handler: one loop claims jobs, never two claims at once, and
// each claimed job runs in a goroutine of its own.
type processor struct {
	q       *Queue
	handler Handler
	// wake asks the loop to claim; a send never blocks (capacity 1).
	wake chan struct{}

	// hard ends every run's context and outcome write when Stop gives up waiting.
	hard  context.Context
	abort context.CancelCauseFunc

	mu sync.Mutex
	// running holds the runs in progress. It is keyed by run, not job id: a job can be
	// claimed again, by this queue too, while its previous run is still being settled.
	running map[*run]struct{}
	// claiming is set while a claim query is out, whose jobs will start running: Pause and
	// Stop wait for it as for a run.
	claiming bool
	// drained is closed and replaced each time a run ends or a claim returns, for waitIdle.
	drained chan struct{}
	// handlers counts handler goroutines, which may outlive their run (a handler that
	// ignores its cancelled context).
	handlers sync.WaitGroup
}

// run is one claimed job being processed.
type run struct {
	job *job.Job
	// claimed is the job as claimed, for the outcome: the handler may change job meanwhile.
	claimed job.Job
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	// settled is set by the first of handler return, timeout and cancel; the others then
	// do nothing (a handler that cancels its own job reaches settle twice).
	settled atomic.Bool
}

// Process starts processing the queue's jobs with handler, up to Concurrency at a time,
// in the background until Stop. It returns at once; call it once per queue
// (ErrProcessTwice). A queue that is not a Queue Master reviews the table once first, as
// the original does, so that jobs orphaned while no master ran are recovered.
func (q *Queue) Process(handler Handler) error {
	if handler == nil {
		return ErrNilHandler
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return ErrStopped
	}
	if q.proc != nil {
		return ErrProcessTwice
	}
	p := &processor{
		q:       q,
		handler: handler,
		wake:    make(chan struct{}, 1),
		running: make(map[*run]struct{}),
		drained: make(chan struct{}),
	}
	p.hard, p.abort = context.WithCancelCause(context.Background())
	q.proc = p
	q.background.Add(1)
	go p.loop()
	return nil
}

// processor returns the queue's processor, nil before Process.
func (q *Queue) processor() *processor {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.proc
}

// signal asks the loop to claim again soon.
func (p *processor) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wakeProcessing asks the loop, if any, to claim: jobs were added or enabled, or a slot
// was freed.
func (q *Queue) wakeProcessing() {
	if p := q.processor(); p != nil {
		p.signal()
	}
}

func (p *processor) loop() {
	q := p.q
	defer q.background.Done()
	if q.Ready(q.life) != nil {
		return
	}
	if !q.cfg.master() {
		// Recover what crashed workers left behind before taking new work, as the original
		// does; a master reviews on its own schedule.
		if _, err := q.review(q.life); err != nil {
			q.log.Warn("review before processing failed", "err", err)
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-q.life.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
		next, err := p.tick()
		if err != nil && q.life.Err() == nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), maxClaimBackoff)
			next = backoff
			q.log.Warn("claiming jobs failed", "err", err, "retry in", backoff)
			q.emit(Event{Type: EventError, Err: err})
		} else if err == nil {
			backoff = 0
		}
		timer.Stop()
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// tick claims what the free slots allow and starts the jobs. It returns when to claim
// again: 0 for at once, a positive wait for the next delayed job, -1 to wait for a wake.
func (p *processor) tick() (time.Duration, error) {
	q := p.q
	free, ok := p.beginClaim()
	if !ok {
		return -1, nil
	}
	// The claim must not be cut off by a graceful Stop: the server would still switch the
	// jobs to active, and with the answer lost they would wait for the Master's review.
	// Stop waits for the loop instead, and then for the jobs claimed here. A Stop that
	// gives up (p.hard ends) abandons the claim: its jobs are left to the review.
	ctx, cancel := context.WithTimeout(p.hard, claimTimeout)
	c, err := q.claim(ctx, free)
	cancel()
	if p.hard.Err() != nil {
		c.jobs = nil
	}
	for _, j := range c.jobs {
		q.emit(Event{Type: EventActive, JobID: j.ID})
		p.start(j)
	}
	p.endClaim()
	if err != nil {
		return 0, err
	}
	if c.unreadable != nil {
		// Documents this library cannot read or update (written by hand, say) would be
		// found again by every claim: back off like a failed claim, the good jobs started.
		return 0, c.unreadable
	}
	switch {
	case len(c.jobs) == free, c.candidates > len(c.jobs):
		// Every slot filled, or other queues took some candidates: there may be more.
		return 0, nil
	case len(c.jobs) == 0 && p.runningCount() == 0:
		q.emit(Event{Type: EventIdle})
	}
	if c.nextIn > 0 {
		return c.nextIn, nil
	}
	return -1, nil
}

// claimTimeout bounds one claim query, which Stop cannot cut short.
const claimTimeout = time.Minute

// beginClaim reports how many jobs to claim, and marks the claim as under way; ok is false
// when the queue is paused, stopping or full.
func (p *processor) beginClaim() (free int, ok bool) {
	q := p.q
	// Mark the claim before looking at the pause, so that a Pause either sees the claim and
	// waits for it, or is seen here.
	p.mu.Lock()
	p.claiming = true
	running := len(p.running)
	p.mu.Unlock()
	free = q.Concurrency() - running
	if free < 1 || q.Paused() || q.life.Err() != nil {
		p.endClaim()
		return 0, false
	}
	return free, true
}

// endClaim marks the claim as done, its jobs started.
func (p *processor) endClaim() {
	p.mu.Lock()
	p.claiming = false
	p.changed()
	p.mu.Unlock()
}

// changed wakes the waiters of waitIdle; p.mu must be held.
func (p *processor) changed() {
	close(p.drained)
	p.drained = make(chan struct{})
}

func (p *processor) runningCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// start runs the handler on a claimed job, with its timeout.
func (p *processor) start(j *job.Job) {
	ctx, cancel := context.WithCancelCause(p.hard)
	rn := &run{job: j, claimed: *j, cancel: cancel}
	p.mu.Lock()
	p.running[rn] = struct{}{}
	// Set under the lock that settle takes first, so a timeout of 0 finds it set.
	rn.timer = time.AfterFunc(j.Timeout, func() { p.timeout(rn) })
	p.mu.Unlock()
	p.q.emit(Event{Type: EventProcessing, JobID: j.ID})
	p.handlers.Add(1)
	go func() {
		defer p.handlers.Done()
		result, err := p.call(ctx, j)
		if errors.Is(context.Cause(ctx), ErrStopped) {
			// Cut off by a Stop that gave up waiting: not the job's failure. The job stays
			// active for the Master's review, as if the process had crashed.
			p.settle(rn, func() {})
			return
		}
		p.settle(rn, func() { p.finish(rn, result, err) })
	}()
}

// call runs the handler, turning a panic into a *PanicError.
func (p *processor) call(ctx context.Context, j *job.Job) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return p.handler(ctx, j)
}

// settle ends a run once, whichever comes first: the handler's return, the timeout, or a
// cancel. outcome records it; then the run's slot is freed and the loop woken.
func (p *processor) settle(rn *run, outcome func()) {
	if !rn.settled.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	rn.timer.Stop()
	p.mu.Unlock()
	outcome()
	rn.cancel(context.Canceled)
	p.mu.Lock()
	delete(p.running, rn)
	p.changed()
	p.mu.Unlock()
	p.signal()
}

// timeout fails a run whose timeout passed, at that moment.
func (p *processor) timeout(rn *run) {
	p.settle(rn, func() {
		rn.cancel(job.ErrTimeout)
		p.failed(rn, timeoutError(rn.claimed.Timeout))
	})
}

// disown ends the runs of job id that a change elsewhere took away (a cancel, a removal,
// a review that failed the job): those of the claims up to upTo (the job's processCount
// after the change). Their handlers' contexts are cancelled with cause, and nothing is
// written: the change already was.
func (p *processor) disown(id string, upTo int, cause error) {
	for _, rn := range p.runsOf(id) {
		if rn.claimed.ProcessCount <= upTo {
			p.settle(rn, func() { rn.cancel(cause) })
		}
	}
}

// runsOf returns the runs of the job id: one, but for a moment two when the job was
// claimed again while its previous run was being settled.
func (p *processor) runsOf(id string) []*run {
	p.mu.Lock()
	defer p.mu.Unlock()
	var runs []*run
	for rn := range p.running {
		if rn.claimed.ID == id {
			runs = append(runs, rn)
		}
	}
	return runs
}

// touched restarts the timeout of the run of job id that made processCount'th claim,
// when it reports progress.
func (p *processor) touched(id string, processCount int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for rn := range p.running {
		if rn.claimed.ID == id && rn.claimed.ProcessCount == processCount {
			rn.timer.Reset(rn.claimed.Timeout)
		}
	}
}

// waitIdle waits until no job is running or about to (claimed), or ctx ends.
func (p *processor) waitIdle(ctx context.Context) error {
	for {
		p.mu.Lock()
		busy, drained := len(p.running) > 0 || p.claiming, p.drained
		p.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Running returns how many jobs the queue is processing now.
func (q *Queue) Running() int {
	if p := q.processor(); p != nil {
		return p.runningCount()
	}
	return 0
}

// Idle reports whether the queue is processing no job.
func (q *Queue) Idle() bool { return q.Running() == 0 }
