package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
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

// Error says that the handler panicked, and with what.
func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, for errors.Is and errors.As.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// maxClaimBackoff bounds the wait between claims that fail (database unreachable, say).
const maxClaimBackoff = 30 * time.Second

// ErrPassBack, returned by a handler as its error, passes the job back: it is saved as it
// is, with status active turned into waiting, as when the handler returns the job itself.
var ErrPassBack = errors.New("queue: job passed back by its handler")

// processor runs the queue's handler. One loop sends every claim and outcome write, one
// query at a time (see commit.go); each claimed job runs in a goroutine of its own.
type processor struct {
	q       *Queue
	handler Handler
	// wake asks the loop to go round; a send never blocks (capacity 1).
	wake chan struct{}
	// quit ends the loop and the heartbeat once Stop has waited for the runs and their
	// outcomes.
	quit chan struct{}

	// svc runs the loop and the heartbeat. Its context, hard, ends every run's context and
	// the loop's queries when Stop gives up waiting (cause ErrStopped).
	svc  *lifecycle.Service
	hard context.Context

	mu sync.Mutex
	// running holds the runs in progress. It is keyed by run, not job id: a job can be
	// claimed again, by this queue too, while its previous run is still being settled.
	running map[*run]struct{}
	// outs are the outcomes waiting for the next commit; writing counts those in the
	// commit under way. Pause and Stop wait for both.
	outs    []*outcome
	writing int
	// claiming is set while a claim is out, whose jobs will start running: Pause and Stop
	// wait for it as for a run.
	claiming bool
	// drained is closed and replaced each time a run ends, a commit returns or a claim
	// returns, for waitIdle.
	drained chan struct{}
	// handlers counts handler goroutines, which may outlive their run (a handler that
	// ignores its cancelled context).
	handlers sync.WaitGroup

	// The loop's own state.
	// lost are rdb.Candidates of a commit whose answer was lost: the write may have claimed
	// them.
	lost []string
	// skip holds due documents that cannot be claimed (not well formed), left out of
	// claims until their entry expires; reported holds the ids already reported.
	skip     map[string]time.Time
	reported map[string]bool
	backoff  time.Duration
	// lim is the table's limits as the claims apply them.
	lim limiter
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
	// out is the run's outcome, set once while it settles.
	out *outcome
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
		q:        q,
		handler:  chain(handler, q.cfg.middleware),
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		running:  make(map[*run]struct{}),
		drained:  make(chan struct{}),
		skip:     make(map[string]time.Time),
		reported: make(map[string]bool),
	}
	p.svc = lifecycle.New()
	p.hard = p.svc.Context()
	q.proc = p
	p.svc.Go(p.loop)
	if q.cfg.heartbeats() {
		p.svc.Go(p.heartbeat)
	}
	return nil
}

// handlerKey marks the context of a handler: its value is the handler's queue.
type handlerKey struct{}

// inHandler reports whether ctx is (derived from) the context of one of q's handlers. A
// handler that stops or pauses its own queue must not be waited for by that call.
func (q *Queue) inHandler(ctx context.Context) bool {
	owner, _ := ctx.Value(handlerKey{}).(*Queue)
	return owner == q
}

// processor returns the queue's processor, nil before Process.
func (q *Queue) processor() *processor {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.proc
}

// signal asks the loop to go round soon.
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

// loop sends the claims and the outcome writes until Stop has waited for the runs and
// their outcomes (quit), or gave up waiting (hard).
func (p *processor) loop(context.Context) {
	q := p.q
	if life := q.bg.Context(); q.ready0(life) == nil && !q.cfg.master() {
		// Recover what crashed workers left behind before taking new work, as the original
		// does; a master reviews on its own schedule.
		if _, err := q.review(life); err != nil && life.Err() == nil {
			q.log.Warn("review before processing failed", "err", err)
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.hard.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
		next := p.tick()
		timer.Stop()
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// tick writes the outcomes waiting, claims what the free slots allow and starts the jobs.
// It returns when to go round again: 0 for at once, a positive wait (for the next delayed
// job, or after a failure), -1 to wait for a wake.
func (p *processor) tick() time.Duration {
	q := p.q
	if q.ready0(p.hard) != nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(p.hard, claimTimeout)
	defer cancel()
	if len(p.lost) > 0 {
		if err := p.adoptLost(ctx); err != nil {
			return p.failedTick(err)
		}
	}
	p.gather()
	free, claiming := p.beginClaim()
	var c rdb.Candidates
	var readErr error
	var heldUntil time.Time
	var tokens map[string]string
	var dropped bool // admit held candidates back: the next read leaves their names out
	if claiming {
		now := time.Now()
		var names []string
		names, heldUntil = p.held(ctx, now)
		if c, readErr = q.db.ReadCandidates(ctx, free, rdb.Skip{IDs: p.skipList(), Names: names}); readErr != nil {
			c = rdb.Candidates{}
		}
		before := len(c.Docs)
		c.Docs, tokens = p.admit(ctx, c.Docs, now)
		dropped = len(c.Docs) < before
		if t, ok := p.lim.soonest(now); ok && (heldUntil.IsZero() || t.Before(heldUntil)) {
			heldUntil = t
		}
	}
	claims, ids := p.claimsOf(c.Docs)
	if len(tokens) > len(claims) {
		p.returnTokens(ctx, tokens, func(id string) bool { _, ok := claims[id]; return !ok })
	}
	outs := p.takeOutcomes()
	if len(outs) == 0 && len(claims) == 0 {
		if claiming {
			p.endClaim()
		}
		if readErr != nil {
			return p.failedTick(readErr)
		}
		if claiming && (len(c.Docs) > 0 || dropped) {
			return 0 // every candidate was left out (malformed, or held back): there may be more
		}
		if claiming {
			return sooner(p.idle(c), heldUntil)
		}
		return -1
	}
	res, err := q.commit(ctx, outs, claims)
	if err != nil {
		// Whether the write landed is unknown: write the outcomes again, and look for the
		// candidates' claims, before anything else.
		p.lost = append(p.lost, ids...)
		p.putBack(outs)
		if claiming {
			p.endClaim()
		}
		return p.failedTick(err)
	}
	if len(tokens) > 0 && len(res.Missed) > 0 {
		missed, ours := make(map[string]bool, len(res.Missed)), make(map[string]bool, len(res.Ours))
		for _, id := range res.Missed {
			missed[id] = true
		}
		for _, doc := range res.Ours {
			id, _ := doc["id"].(string)
			ours[id] = true // claimed by an earlier try of this write: it runs, with its token
		}
		p.returnTokens(ctx, tokens, func(id string) bool { return missed[id] && !ours[id] })
	}
	again := p.written(ctx, outs, res)
	jobs := p.decodeClaimed(res)
	if p.hard.Err() != nil {
		jobs = nil
	}
	q.claimedMetric(len(jobs))
	for _, j := range jobs {
		q.emit(Event{Type: EventActive, JobID: j.ID})
		p.start(j)
	}
	if len(res.Ours) > 0 && p.hard.Err() == nil {
		p.adopt(res.Ours)
	}
	if claiming {
		p.endClaim()
	}
	if res.Errors > 0 {
		q.emit(Event{Type: EventError, Err: fmt.Errorf("queue %s: write outcomes and claim jobs: %d documents failed: %s", q.cfg.name, res.Errors, res.FirstError)})
	}
	p.backoff = 0
	next := time.Duration(-1)
	switch {
	case readErr != nil:
		return p.failedTick(readErr)
	case !claiming:
	case len(jobs) == free, len(c.Docs) > len(jobs), dropped:
		// Every slot filled, or candidates were taken by other queues, left out as
		// malformed or held back by a limit: there may be more.
		return 0
	default:
		next = sooner(p.idle(c), heldUntil)
	}
	if !again.IsZero() {
		// A job this commit put back for a retry or a repeat falls due then.
		wait := max(time.Until(again), 0)
		if next < 0 || wait < next {
			next = wait
		}
	}
	return next
}

// claimsOf turns candidates into the claims of a commit (see rdb.ClaimSpec), keyed by id;
// those that cannot be processed are left out, from this claim and the next ones, and
// reported once.
func (p *processor) claimsOf(docs []map[string]any) (map[string]any, []string) {
	claims := make(map[string]any, len(docs))
	ids := make([]string, 0, len(docs))
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, doc := range docs {
		j, err := rdb.Claimable(p.q.store(), doc)
		if err != nil {
			id, _ := doc["id"].(string)
			p.noteMalformed(id, err)
			continue
		}
		claims[j.ID] = p.q.db.ClaimSpec(j, now, p.q.leaseEnd(j, now))
		ids = append(ids, j.ID)
	}
	return claims, ids
}

// sooner returns the wait until t when it is sooner than wait (negative: none).
func sooner(wait time.Duration, t time.Time) time.Duration {
	if t.IsZero() {
		return wait
	}
	until := max(time.Until(t), 0) + 5*time.Millisecond
	if wait < 0 || until < wait {
		return until
	}
	return wait
}

// idle handles a claim that came back short: the queue raises idle when nothing runs, and
// sleeps until the next delayed job falls due, or until woken.
func (p *processor) idle(c rdb.Candidates) time.Duration {
	if p.runningCount() == 0 {
		p.q.emit(Event{Type: EventIdle})
	}
	if c.NextDue.IsZero() {
		return -1
	}
	// The server's clock decided what is due; a little slack covers the two clocks
	// disagreeing by a few milliseconds.
	return max(time.Until(c.NextDue), 0) + 5*time.Millisecond
}

// failedTick reports a failed query and returns the backoff before the next try.
func (p *processor) failedTick(err error) time.Duration {
	q := p.q
	if p.hard.Err() != nil {
		return -1
	}
	p.backoff = min(max(2*p.backoff, 100*time.Millisecond), maxClaimBackoff)
	wait := p.backoff/2 + rand.N(p.backoff/2+1)
	q.log.Warn("processing query failed", "err", err, "retry in", wait)
	q.emit(Event{Type: EventError, Err: err})
	return wait
}

// gatherWindow is how long the loop waits, at most, for the running jobs to finish before
// it writes the outcomes and claims for the slots freed so far. Without it, the first of a
// group of jobs that finish together is written and its slot claimed alone, and the
// others wait for that commit: measured at concurrency 10 on RethinkDB 2.4.4, commits of 1
// and 9 outcomes by turns, 0.39 queries per job; with it, 0.21.
const gatherWindow = 2 * time.Millisecond

// gather waits, within gatherWindow, until no job runs: then one commit writes the
// outcomes of the jobs that finished together and claims for all their slots. An outcome
// therefore waits at most gatherWindow longer than the commit in flight.
func (p *processor) gather() {
	var deadline <-chan time.Time
	for {
		p.mu.Lock()
		running, changed := len(p.running), p.drained
		p.mu.Unlock()
		if running == 0 {
			return
		}
		if deadline == nil {
			t := time.NewTimer(gatherWindow)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			return
		case <-p.hard.Done():
			return
		}
	}
}

// claimTimeout bounds one query of the loop, which Stop cannot cut short.
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
	if free < 1 || q.Paused() || q.bg.Context().Err() != nil {
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
	base := p.q.cfg.baseContext()
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(base, handlerKey{}, p.q))
	// A Stop that gives up waiting cuts the handler off with the cause ErrStopped.
	unlink := context.AfterFunc(p.hard, func() { cancel(context.Cause(p.hard)) })
	rn := &run{job: j, claimed: *j, ctx: ctx, cancel: cancel}
	p.mu.Lock()
	p.running[rn] = struct{}{}
	// Set under the lock that settle takes first, so a timeout of 0 finds it set.
	rn.timer = time.AfterFunc(j.Timeout, func() { p.timeout(rn) })
	p.mu.Unlock()
	p.q.emit(Event{Type: EventProcessing, JobID: j.ID})
	p.handlers.Add(1)
	go func() {
		defer p.handlers.Done()
		defer unlink()
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
// cancel. outcome records it (most outcomes are queued for the loop's next commit); then
// the run's slot is freed and the loop woken, which writes the outcome and claims for the
// slot in one query.
func (p *processor) settle(rn *run, outcome func()) {
	if !rn.settled.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	rn.timer.Stop()
	p.mu.Unlock()
	rn.progress.stop()
	outcome()
	rn.cancel(context.Canceled)
	// The slot is freed and the outcome queued at once, so that the loop sees both and
	// writes the outcome in the same commit as the claim for the slot.
	p.mu.Lock()
	if rn.out != nil {
		p.outs = append(p.outs, rn.out)
	}
	delete(p.running, rn)
	p.changed()
	p.mu.Unlock()
	p.signal()
}

// enqueue records a run's outcome, which settle queues for the loop's next commit.
func (p *processor) enqueue(o *outcome) {
	o.rn.out = o
}

// takeOutcomes hands the outcomes waiting to the loop's commit.
func (p *processor) takeOutcomes() []*outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	outs := p.outs
	p.outs = nil
	p.writing += len(outs)
	return outs
}

// putBack queues again the outcomes of a commit that failed.
func (p *processor) putBack(outs []*outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range outs {
		o.tries++
	}
	p.outs = append(outs, p.outs...)
	p.writing -= len(outs)
	p.changed()
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

// waitIdle waits until no job is running or about to (claimed), and no outcome waits to
// be written, or ctx ends.
func (p *processor) waitIdle(ctx context.Context) error {
	for {
		p.mu.Lock()
		busy, drained := len(p.running) > 0 || p.claiming || len(p.outs) > 0 || p.writing > 0, p.drained
		p.mu.Unlock()
		if !busy {
			return nil
		}
		p.signal()
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop ends the processor for Stop: it waits for the running jobs, their outcomes and their
// handlers (also those that outlived their run, past a timeout) until ctx ends, and then
// cancels them with cause ErrStopped; the loop ends either way.
func (p *processor) stop(ctx context.Context) error {
	err := p.waitIdle(ctx)
	if err == nil {
		err = lifecycle.Wait(ctx, p.handlers.Wait)
	}
	if err != nil {
		p.svc.Cancel(ErrStopped)
	}
	close(p.quit)
	_ = p.svc.Wait(context.Background()) // the loop and the heartbeat end with quit
	return err
}

// dropDisowned ends the runs whose jobs are no longer theirs in the database (cancelled,
// removed, recovered by a review), as their handlers' contexts would have been had the
// feed not been down.
func (p *processor) dropDisowned(ctx context.Context) error {
	p.mu.Lock()
	runs := make([]*run, 0, len(p.running))
	ids := make([]string, 0, len(p.running))
	for rn := range p.running {
		runs = append(runs, rn)
		ids = append(ids, rn.claimed.ID)
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	stamps, err := p.q.db.ReadStamps(ctx, ids)
	if err != nil {
		return err
	}
	for _, rn := range runs {
		if d, ok := stamps[rn.claimed.ID]; !ok || d.Status != string(job.Active) || int(d.ProcessCount) != rn.claimed.ProcessCount {
			p.settle(rn, func() { rn.cancel(job.ErrCancelled) })
		}
	}
	return nil
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
