// Package processor runs a queue's handler on its jobs. It has three parts, each with one
// job and a goroutine (or a goroutine per run) of its own:
//
//   - the producer claims due jobs for the free slots, in priority order, applying the
//     table's limits, and decides when to claim again (producer.go);
//   - the executor runs one claimed job: its context, timeout, progress and panics, and
//     turns what the handler returned into an outcome (executor.go, outcome.go);
//   - the completer writes the outcomes in batches, one guarded update for all those
//     ready, and reports them (completer.go).
//
// The producer and the completer each have one query in flight at most, so a claim and
// an outcome write go to the server at the same time: a busy queue keeps two of the
// server's cores at work. Package queue builds one Processor per Queue.Process and talks
// to it through the methods below; the processor knows nothing of Queue.
package processor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Handler processes one job; see queue.Handler.
type Handler func(ctx context.Context, j *job.Job) (result any, err error)

// Event is what the processor reports; Type is one of the queue's event names.
type Event struct {
	Type        string
	JobID       string
	Err         error
	IsRepeating bool
	// Reason is a cancel's reason, on cancelled events.
	Reason string
	// Job is the run's job as it was claimed, and Entry the log entry of its outcome, on
	// completed, terminated and cancelled events of runs.
	Job   *job.Job
	Entry job.LogEntry
	// Claimed are the children of a completed run's job that its outcome's write
	// released and claimed here (see Config.Children); they start after the event.
	Claimed []*job.Job
}

// The event types the processor raises.
const (
	EventActive     = "active"
	EventProcessing = "processing"
	EventCompleted  = "completed"
	EventFailed     = "failed"
	EventTerminated = "terminated"
	EventCancelled  = "cancelled"
	EventIdle       = "idle"
	EventError      = "error"
	EventRemoved    = "removed"
)

// Store is the storage the processor works on: the queue's table (*rdb.Table).
type Store interface {
	ReadCandidates(ctx context.Context, n int, skip rdb.Skip) (rdb.Candidates, error)
	HeadPriority(ctx context.Context, skip rdb.Skip) (float64, bool, error)
	NewClaim(j *job.Job, at, leaseEnd time.Time) rdb.Claim
	Claim(ctx context.Context, s rdb.Store, claims []rdb.Claim) (rdb.ClaimResult, error)
	ClaimAndLook(ctx context.Context, s rdb.Store, claims []rdb.Claim, skip rdb.Skip) (rdb.ClaimResult, rdb.Head, error)
	ReadClaimedHere(ctx context.Context, s rdb.Store, ids []string) ([]*job.Job, error)
	Finish(ctx context.Context, outs []rdb.Outcome) ([]rdb.RunKey, error)
	FinishRelease(ctx context.Context, s rdb.Store, outs []rdb.Outcome, f rdb.Follow) ([]rdb.RunKey, rdb.Released, error)
	Landed(ctx context.Context, outs []rdb.Outcome) ([]rdb.RunKey, error)
	ReadStamps(ctx context.Context, ids []string) (map[string]rdb.StampedDoc, error)
	DeleteAny(ctx context.Context, ids []string) error
	TakeTokens(ctx context.Context, name string, want int) (int, time.Duration, error)
	ReturnTokens(ctx context.Context, name string, n int) error
	RenewLeases(ctx context.Context, running map[string]int, lease time.Duration) error
	// PutWorker writes the queue's worker entry and returns the live ones, and the
	// limits when asked.
	PutWorker(ctx context.Context, w rdb.WorkerBeat) (rdb.Beat, error)
	Limits(ctx context.Context) (rdb.LimitSet, error)
	DeleteWorker(ctx context.Context) error
	Expire(ctx context.Context, ids []string, now time.Time) ([]string, error)
	TakeSlots(ctx context.Context, takes []rdb.SlotTake) (rdb.Slots, error)
	ReleaseSlots(ctx context.Context, runs map[string][]rdb.Holder) error
	Stale(ctx context.Context, slots rdb.Slots, now time.Time) (map[string][]string, error)
	SequenceHeads(ctx context.Context, keys []string) (map[string]rdb.Candidate, error)
	ReadSequenceJobs(ctx context.Context, ids []string) (map[string]rdb.SequenceJob, error)
	EnsureSequenceIndex(ctx context.Context) error
}

// Limiting is how the producer applies the limit of one job name.
type Limiting struct {
	// Starts is positive for a rate limit: the producer takes a token from the table's
	// bucket for each job of the name it claims.
	Starts int
	// Window, when not nil, tells whether the name's window is open at t, and when it
	// opens next when it is not.
	Window func(t time.Time) (open bool, opens time.Time)
	// Running, when positive, caps the jobs of the name active at once across every
	// worker: each run holds one of its slots (see rdb.TakeSlots).
	Running int
}

// Limitings are the table's limits as the producer applies them: by job name, and the
// running limit and the rate of each group (the key "" holds the default of groups
// without one of their own).
type Limitings struct {
	Names      map[string]Limiting
	Groups     map[string]int
	GroupRates map[string]Rate
}

// Rate is a group's rate limit: at most Starts starts in any span of Per (zero Starts:
// none).
type Rate struct {
	Starts int
	Per    time.Duration
}

// none reports whether l limits nothing.
func (l Limitings) none() bool {
	return len(l.Names) == 0 && len(l.Groups) == 0 && len(l.GroupRates) == 0
}

// Config is what a Processor needs. Every func field is called from the processor's
// goroutines and must be safe for concurrent use.
type Config struct {
	Store Store
	// Jobs is the store claimed jobs are attached to, for their own methods.
	Jobs    rdb.Store
	Handler Handler
	// QueueID and Name identify the queue in what it writes and says.
	QueueID string
	Name    string
	// LimitJobLogs is the queue's log limit.
	LimitJobLogs int
	// Concurrency is how many jobs may run at once, read at each claim.
	Concurrency func() int
	// Claiming reports whether the queue takes new jobs (not paused, not stopping).
	Claiming func() bool
	// Ready waits until the queue's table is ready.
	Ready func(ctx context.Context) error
	// Feed is true when the queue follows the table's changefeed, so that the producer
	// learns of jobs made claimable elsewhere as hints and an idle queue need not read the
	// table each time a slot frees.
	Feed bool
	// HandlerContext returns the context a run's handler context derives from (the
	// queue's BaseContext, marked as a handler's).
	HandlerContext func() context.Context
	// Heartbeat is the lease renewal period of running jobs (zero: off).
	Heartbeat time.Duration
	// AssertWorkers creates the table of workers, which the heartbeat writes, if it is
	// missing.
	AssertWorkers func(ctx context.Context) error
	// LeaseEnd is when a run of j that starts, renews or reports progress at now may be
	// taken for a crashed one.
	LeaseEnd func(j *job.Job, now time.Time) time.Time
	// RetryDelay is the queue's own retry delay (nil: the job's policy).
	RetryDelay rdb.CustomDelay
	// RemoveFinished removes jobs as soon as their outcome finishes them.
	RemoveFinished bool
	// Limits makes the table's limits, as Store.Limits and a beat read them, what the
	// producer applies (nil: the queue applies no limits).
	Limits func(set rdb.LimitSet) Limitings
	// Children, when set, returns the children that the job of a completed run lists
	// (job.SetDependsOn), for its outcome's write to release and claim when the queue is
	// idle with a slot free for each (rdb.Table.FinishRelease); nil when there are none
	// to release so.
	Children func(j *job.Job) []string
	// PassBack saves a job a handler passed back, only while the run that made
	// processCount owner still owns it (ErrNotOwned otherwise).
	PassBack func(ctx context.Context, j *job.Job, owner int) error
	// Stalled, when set, is told when a query with a deadline of the processor's own (an
	// outcome write, a heartbeat) ran out of time: the connections may have gone silent,
	// and the session is to be replaced (see rdb.Conn).
	Stalled func()
	// Hooks report what the processor does.
	Hooks Hooks
	Log   *slog.Logger
}

// timedOut reports whether err ended a query because ctx, a context with a deadline of
// the processor's own, ran out, while the processor runs on; it then tells Stalled.
func (p *Processor) timedOut(ctx context.Context, err error) bool {
	if err == nil || p.hard.Err() != nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	if p.cfg.Stalled != nil {
		p.cfg.Stalled()
	}
	return true
}

// Hooks report what the processor does. Any may be nil.
type Hooks struct {
	Emit func(Event)
	// Claimed is told of each claim that made n jobs active.
	Claimed func(n int)
	// RunEnded is told of each run whose outcome was written: the job as claimed, the
	// status it moved to and when.
	RunEnded func(claimed job.Job, status job.Status, at time.Time)
	// Terminated is called, in a goroutine the processor owns, for each job that ended
	// terminated, with the last error.
	Terminated func(j *job.Job, err error)
	// Removed is told of the jobs the processor deleted, before it deletes them.
	Removed func(ids []string)
	// Expired is told of the n jobs a claim round cancelled for their start deadline.
	Expired func(n int)
}

// Processor runs a queue's handler on its jobs until Stop.
type Processor struct {
	cfg  Config
	prod *producer
	exec *executor
	comp *completer
	act  *activity
	svc  *lifecycle.Service
	// hard ends every run's context and the processor's queries when Stop gives up
	// waiting (cause: what Stop was given).
	hard context.Context
	// quit ends the goroutines once Stop has waited for the runs and their outcomes.
	quit chan struct{}
	once sync.Once
	// slotRuns are the running slots the runs of this processor hold, by run (see
	// takeSlots), for their outcome to give back.
	slotMu   sync.Mutex
	slotRuns map[rdb.RunKey][]string
}

// New returns a processor for cfg; Start starts it.
func New(cfg Config) *Processor {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &Processor{cfg: cfg, act: newActivity(), svc: lifecycle.New(), quit: make(chan struct{})}
	p.hard = p.svc.Context()
	p.comp = newCompleter(p)
	p.exec = newExecutor(p)
	p.prod = newProducer(p)
	return p
}

// Start starts the producer, the completer and the heartbeat. review, when not nil, runs
// first, before the first claim.
func (p *Processor) Start(review func()) {
	p.svc.Go(func(context.Context) { p.prod.loop(review) })
	p.svc.Go(func(context.Context) { p.comp.loop() })
	if p.cfg.Heartbeat > 0 {
		p.svc.Go(func(context.Context) { p.heartbeat() })
	}
}

// announceIdle raises idle when the queue just went idle.
func (p *Processor) announceIdle() {
	if p.act.idleNow() {
		p.emit(Event{Type: EventIdle})
	}
}

// emit reports e, when anyone listens.
func (p *Processor) emit(e Event) {
	if p.cfg.Hooks.Emit != nil {
		p.cfg.Hooks.Emit(e)
	}
}

// Wake asks the producer to read the table and claim: jobs were added or enabled without
// a hint, a pause ended, the concurrency grew, a review ran.
func (p *Processor) Wake() { p.prod.wake(true) }

// Hint tells the producer of a job that became claimable: added by this queue (by is
// this queue's id) or seen on the changefeed, made so by the queue by. An idle producer
// claims it by id, without reading the table.
func (p *Processor) Hint(j *job.Job, by string) { p.prod.hint(j, by) }

// Taken tells the producer that job id is no longer claimable (active, finished or
// removed): it drops the job's hint.
func (p *Processor) Taken(id string) { p.prod.taken(id) }

// LimitsChanged makes the producer read the limits again before its next claim.
func (p *Processor) LimitsChanged() { p.prod.limitsChanged() }

// Running returns how many jobs run now.
func (p *Processor) Running() int { return p.exec.count() }

// Disown ends the runs of job id that a change elsewhere took away (a cancel, a
// removal, a review that failed the job): those of the claims up to upTo (the job's
// processCount after the change). Their handlers' contexts are cancelled with cause, and
// nothing is written: the change already was.
func (p *Processor) Disown(id string, upTo int, cause error) { p.exec.disown(id, upTo, cause) }

// DropDisowned ends the runs whose jobs are no longer theirs in the database (cancelled,
// removed, recovered by a review), as their handlers' contexts would have been had the
// changefeed not been down.
func (p *Processor) DropDisowned(ctx context.Context) error { return p.exec.dropDisowned(ctx) }

// Progress takes a progress report of j when it runs here: it is written now or
// coalesced with the reports around it. ok is false when j does not run here.
func (p *Processor) Progress(ctx context.Context, j *job.Job, percent float64, write func(ctx context.Context, j *job.Job, percent float64, refresh bool) error) (ok bool, err error) {
	rn := p.exec.runOf(j.ID, j.ProcessCount)
	if rn == nil {
		return false, nil
	}
	return true, p.exec.progress(ctx, rn, j, percent, write)
}

// Touched restarts the timeout of the run of job id that made the processCount'th claim,
// when it reported progress.
func (p *Processor) Touched(id string, processCount int) { p.exec.touched(id, processCount) }

// WaitIdle waits until no job runs or is about to (claimed), and no outcome waits to be
// written, or ctx ends.
func (p *Processor) WaitIdle(ctx context.Context) error {
	p.prod.wake(false)
	return p.act.waitIdle(ctx)
}

// Stop waits for the running jobs, their outcomes and their handlers (also those that
// outlived their run) until ctx ends, and then cancels them with cause and hands their
// jobs back (see handBack); the processor's goroutines end either way. It returns ctx's
// error when it gave up waiting.
func (p *Processor) Stop(ctx context.Context, cause error) error {
	err := p.WaitIdle(ctx)
	if err == nil {
		err = lifecycle.Wait(ctx, p.exec.handlers.Wait)
	}
	if err != nil {
		p.svc.Cancel(cause)
	}
	p.once.Do(func() { close(p.quit) })
	_ = p.svc.Wait(context.Background())
	if err != nil {
		p.handBack()
	}
	return err
}

// activity tracks what Pause and Stop wait for: runs, a claim under way, outcomes not
// written yet; and when the queue goes idle.
type activity struct {
	mu       sync.Mutex
	running  int
	claiming bool
	pending  int
	// reserved counts the slots Reserve holds for jobs being inserted already claimed.
	reserved int
	// starved is set when the producer found nothing to claim, until it claims again;
	// announced once idle was raised for it.
	starved, announced bool
	// changed is closed and replaced at each change.
	changed chan struct{}
}

// idleNow reports, once per stretch of idleness, that the queue went idle: the producer
// found nothing to claim, no job runs and every outcome is written.
func (a *activity) idleNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.starved || a.announced || a.running > 0 || a.pending > 0 || a.reserved > 0 {
		return false
	}
	a.announced = true
	return true
}

// starve records whether the producer found nothing to claim.
func (a *activity) starve(starved bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starved = starved
	if !starved {
		a.announced = false
	}
}

func newActivity() *activity { return &activity{changed: make(chan struct{})} }

// update changes the counts under the lock and wakes the waiters.
func (a *activity) update(f func(a *activity)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
	close(a.changed)
	a.changed = make(chan struct{})
}

// state returns the counts and the channel closed at the next change.
func (a *activity) state() (running int, busy bool, changed <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, a.running > 0 || a.claiming || a.pending > 0 || a.reserved > 0, a.changed
}

func (a *activity) waitIdle(ctx context.Context) error {
	for {
		_, busy, changed := a.state()
		if !busy {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// gatherWindow is how long the producer waits, at most, for the running jobs to finish
// before it claims for the slots freed so far, and how long the completer waits for the
// running jobs before it writes the outcomes ready. Without it, the first of a group of
// jobs that finish together is claimed for or written alone, and the others wait for that
// query: measured at concurrency 10 on RethinkDB 2.4.4, writes of 1 and 9 by turns. (A
// longer gather while outcomes keep coming, for worker processes that share the CPU,
// measured no fewer writes.)
const gatherWindow = 2 * time.Millisecond

// gather waits until no job runs, or gatherWindow has passed, or p stops.
func (p *Processor) gather() {
	t := time.NewTimer(gatherWindow)
	defer t.Stop()
	for {
		running, _, changed := p.act.state()
		if running == 0 {
			return
		}
		select {
		case <-changed:
		case <-t.C:
			return
		case <-p.hard.Done():
			return
		}
	}
}
