package processor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The completer writes outcomes in batches: when outcomes are ready and no write is in
// flight it waits for the running jobs to finish, for gatherWindow at most, then writes
// every outcome ready in one
// update (rdb.Table.Finish). Outcomes that come while a write is in flight go in the next
// one, so a busy queue writes many per flush, and an outcome waits at most for the gather
// and the write already in flight. Its events are raised once its write lands.
//
// A write that fails has an unknown effect: its outcomes are written again after a
// backoff, and the ownership guard with the outcome's stamp makes a second write of one
// that landed count as landed, once.

// maxWriteBackoff bounds the wait between outcome writes that fail.
const maxWriteBackoff = 30 * time.Second

// writeTimeout bounds one outcome write, which Stop cannot cut short; with heartbeats on,
// a write is given up sooner when a lease would end first, but never sooner than
// minWriteTimeout.
const (
	writeTimeout    = time.Minute
	minWriteTimeout = time.Second
)

type completer struct {
	p *Processor

	// lastStamp is the stamp of the last write (only the loop writes).
	lastStamp time.Time

	mu   sync.Mutex
	outs []*outcome
	// inflight are the outcomes of the write under way.
	inflight []*outcome
	// ready is signalled when outcomes are added; a send never blocks (capacity 1).
	ready chan struct{}
}

func newCompleter(p *Processor) *completer {
	return &completer{p: p, ready: make(chan struct{}, 1)}
}

// add queues an outcome for the next write; the activity counts it as pending already.
func (c *completer) add(o *outcome) {
	c.mu.Lock()
	c.outs = append(c.outs, o)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// take hands every outcome ready to a write.
func (c *completer) take() []*outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	outs := c.outs
	c.outs = nil
	c.inflight = outs
	return outs
}

// unwritten returns the runs whose outcomes are queued or being written: the heartbeat
// renews their leases until they are written.
func (c *completer) unwritten() []*run {
	c.mu.Lock()
	defer c.mu.Unlock()
	runs := make([]*run, 0, len(c.outs)+len(c.inflight))
	for _, o := range c.outs {
		runs = append(runs, o.rn)
	}
	for _, o := range c.inflight {
		runs = append(runs, o.rn)
	}
	return runs
}

// leaseLeft is how long the earliest lease among outs lasts from now.
func leaseLeft(outs []*outcome, now time.Time) time.Duration {
	left := time.Duration(math.MaxInt64)
	for _, o := range outs {
		left = min(left, o.rn.leaseLeft(now))
	}
	return left
}

// putBack queues again the outcomes of a write that failed, first.
func (c *completer) putBack(outs []*outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outs {
		o.tries++
	}
	c.outs = append(outs, c.outs...)
	c.inflight = nil
}

// retryWait is how long to wait before writing outs again after a failed write: the
// backoff, jittered, but never so long that a lease ends first: at most half of the
// shortest lease left (and at least minRetryWait), so that a connection loss shorter
// than the lease costs no second run. Once a lease has ended there is no hurry left: the
// backoff alone.
func retryWait(backoff time.Duration, outs []*outcome, now time.Time) time.Duration {
	wait := backoff/2 + rand.N(backoff/2+1)
	if left := leaseLeft(outs, now); left > 0 {
		wait = max(min(wait, left/2), minRetryWait)
	}
	return wait
}

// dueAgain is the earliest time an outcome of outs makes its job claimable again (a
// failure to retry, a repeat, a pass-back), if any does.
func dueAgain(outs []*outcome) (time.Time, bool) {
	var at time.Time
	for _, o := range outs {
		if e := o.write.DateEnable; e != nil && !o.finished && (at.IsZero() || e.Before(at)) {
			at = *e
		}
	}
	return at, !at.IsZero()
}

// minRetryWait is the shortest wait between failed outcome writes.
const minRetryWait = 20 * time.Millisecond

// loop writes outcomes until the processor quits or gives up waiting.
func (c *completer) loop() {
	p := c.p
	var backoff time.Duration
	for {
		select {
		case <-c.ready:
		case <-p.quit:
			return
		case <-p.hard.Done():
			return
		}
		p.gather()
		outs := c.take()
		if len(outs) == 0 {
			continue
		}
		if err := c.write(outs); err != nil {
			if p.hard.Err() != nil {
				return
			}
			c.putBack(outs)
			// A write whose answer was lost may have landed, and made its jobs due again
			// (a failure to retry, a repeat): the producer looks for them then, as it
			// would after a confirmed write. Without a changefeed nothing else may tell it.
			if at, ok := dueAgain(outs); ok {
				p.prod.dueAt(at)
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), maxWriteBackoff)
			wait := retryWait(backoff, outs, time.Now())
			p.cfg.Log.Warn("writing outcomes failed", "err", err, "retry in", wait)
			p.emit(Event{Type: EventError, Err: err})
			select {
			case <-time.After(wait):
			case <-p.hard.Done():
				return
			}
			select {
			case c.ready <- struct{}{}:
			default:
			}
			continue
		}
		backoff = 0
	}
}

// write writes outs and follows up on those that landed.
func (c *completer) write(outs []*outcome) error {
	p := c.p
	// A write that hangs (a connection that went silent) is given up in time to try
	// again on another before the shortest lease ends.
	timeout := writeTimeout
	if p.cfg.Heartbeat > 0 {
		timeout = min(timeout, max(leaseLeft(outs, time.Now())/4, minWriteTimeout))
	}
	ctx, cancel := context.WithTimeout(p.hard, timeout)
	defer cancel()
	return c.writeIn(ctx, outs)
}

// writeIn writes outs with ctx and follows up on those that landed.
func (c *completer) writeIn(ctx context.Context, outs []*outcome) error {
	p := c.p
	// The outcomes written for the first time are stamped with this write's time, so
	// that they share one update (see rdb.Outcome); a retry keeps the stamp it had. Each
	// write's stamp is later than the last one's, so that no two writes share a stamp.
	at := now()
	if !at.After(c.lastStamp) {
		at = c.lastStamp.Add(time.Millisecond)
	}
	c.lastStamp = at
	writes := make([]rdb.Outcome, len(outs))
	var retried []rdb.Outcome
	for i, o := range outs {
		if o.tries == 0 {
			o.write.DateFinished, o.write.Entry.Date, o.write.Trunc.Date = at, at, at
		}
		writes[i] = o.write
		if o.tries > 0 {
			retried = append(retried, o.write)
		}
	}
	var done []rdb.RunKey
	var err error
	var f rdb.Follow
	var parent *outcome
	var n int
	if len(retried) == 0 {
		f, parent, n = c.follow(outs, at)
	}
	c.release(outs)
	if len(retried) > 0 {
		// An earlier try of these may have landed: write those that did not, and count
		// those that did as written. Outcomes are told apart by job and run, so a run's
		// outcome that landed is never taken for the next run's of the same job.
		done, err = p.cfg.Store.Landed(ctx, retried)
		if err == nil {
			writes = notIn(writes, done)
			if len(writes) > 0 {
				var more []rdb.RunKey
				more, err = p.cfg.Store.Finish(ctx, writes)
				done = append(done, more...)
			}
		}
	} else if n > 0 {
		var rel rdb.Released
		done, rel, err = p.cfg.Store.FinishRelease(ctx, p.cfg.Jobs, writes, f)
		if err != nil || rel.Unreadable != nil {
			// The release may have landed: the producer looks for those children before
			// its next claim, as for jobs inserted claimed whose answer was lost.
			p.Unreserve(n, f.IDs)
			if rel.Unreadable != nil {
				p.cfg.Log.Warn("children released and claimed with their parent's outcome cannot be read; they are left active for the review", "err", rel.Unreadable)
			}
		} else {
			parent.claimed = rel.Claimed
			defer p.Started(n, rel.Claimed)
		}
	} else {
		done, err = p.cfg.Store.Finish(ctx, writes)
	}
	if err != nil {
		p.timedOut(ctx, err)
		return err
	}
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	c.written(ctx, outs, done)
	return nil
}

// follow is the release that the write of outs, first written at at, makes of the
// children of the one completed run among them whose job lists children (Config.Children),
// when the queue, idle, reserves a slot for each of them (waiting up to followWait for a
// claim under way, a read that finds nothing on an idle queue); n is how many it reserved
// (0: none to make).
func (c *completer) follow(outs []*outcome, at time.Time) (f rdb.Follow, parent *outcome, n int) {
	p := c.p
	if p.cfg.Children == nil {
		return f, nil, 0
	}
	var kids []string
	for _, o := range outs {
		if ids := o.children; len(ids) > 0 { // read when its run ended (executor.hold)
			if parent != nil {
				return f, nil, 0 // two parents: their children go through the release
			}
			parent, kids = o, ids
		}
	}
	if parent == nil || len(kids) > maxFollow {
		return f, nil, 0
	}
	// The parent's slot, held since its run ended (executor.hold), counts for one child,
	// as long as nothing claimable waits that the child would overtake.
	held := parent.held
	if held > 0 && (!p.prod.knowsNothing(time.Now()) || !p.cfg.Claiming() || p.hard.Err() != nil) {
		return f, nil, 0
	}
	if more := len(kids) - held; more > 0 && !p.reserve(more, followWait) {
		return f, nil, 0
	}
	parent.held = 0
	f = rdb.Follow{Parent: parent.write.ID, Entry: parent.write.Entry.Document(), IDs: kids, Now: at}
	if p.cfg.Heartbeat > 0 {
		f.HB = HeartbeatLease(p.cfg.Heartbeat)
	}
	return f, parent, len(kids)
}

// release frees the slots that outs still hold for children they did not follow.
func (c *completer) release(outs []*outcome) {
	n := 0
	for _, o := range outs {
		n, o.held = n+o.held, 0
	}
	if n > 0 {
		c.p.Unreserve(n, nil)
	}
}

// followWait bounds how long an outcome's write waits for a claim under way before it
// leaves its children to the release (Processor.Reserve waits longer: no outcome waits
// behind it).
const followWait = 10 * time.Millisecond

// maxFollow is the most children a parent's outcome write releases and claims.
const maxFollow = 100

// notIn returns the writes whose run is not in keys.
func notIn(writes []rdb.Outcome, keys []rdb.RunKey) []rdb.Outcome {
	skip := make(map[rdb.RunKey]bool, len(keys))
	for _, k := range keys {
		skip[k] = true
	}
	var out []rdb.Outcome
	for _, w := range writes {
		if !skip[w.Key()] {
			out = append(out, w)
		}
	}
	return out
}

// written raises the events of the outcomes that landed, calls the hooks, removes the jobs
// that finished when the queue removes them at once, and tells the producer when the
// earliest job put back for a retry or a repeat falls due.
func (c *completer) written(ctx context.Context, outs []*outcome, done []rdb.RunKey) {
	p := c.p
	landed := make(map[rdb.RunKey]bool, len(done))
	for _, k := range done {
		landed[k] = true
	}
	var again time.Time
	var remove []string
	for _, o := range outs {
		id := o.write.ID
		if !landed[o.write.Key()] {
			// Its guard matched nothing: the run's claim was no longer the job's (cancelled,
			// removed, failed by a review when its lease ended, or claimed again).
			p.cfg.Log.Warn("a run's outcome was not written: the job changed elsewhere while it ran (cancelled, removed, or failed by a Queue Master's review when its lease ended)",
				"job", id, "processCount", o.write.ProcessCount, "outcome", o.write.Status, "tries", o.tries+1)
			continue
		}
		// Recorded before the event, so that whoever sees the event sees the run counted.
		if p.cfg.Hooks.RunEnded != nil {
			p.cfg.Hooks.RunEnded(o.rn.claimed, o.write.Status, o.write.DateFinished)
		}
		if !o.handedBack {
			p.emit(Event{Type: o.event, JobID: id, IsRepeating: o.repeating, Err: o.err, Reason: o.reason, Job: &o.rn.claimed, Entry: o.write.Entry, Claimed: o.claimed})
		}
		if o.terminated != nil {
			c.terminatedHook(o.terminated, o.err)
		}
		if at := o.write.DateEnable; at != nil && !o.finished && (again.IsZero() || at.Before(again)) {
			again = *at
		}
		if o.finished && p.cfg.RemoveFinished {
			remove = append(remove, id)
		}
	}
	ended := make([]rdb.RunKey, len(outs))
	for i, o := range outs {
		ended[i] = o.write.Key()
	}
	p.runsEnded(ctx, ended)
	p.act.update(func(a *activity) { a.pending -= len(outs) })
	p.announceIdle()
	if !again.IsZero() {
		p.prod.dueAt(again)
	}
	p.removeFinished(ctx, remove)
}

// removeFinished removes jobs that just finished, for a queue whose finished jobs go at
// once, and raises their removed events.
func (p *Processor) removeFinished(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if p.cfg.Hooks.Removed != nil {
		p.cfg.Hooks.Removed(ids)
	}
	if err := p.cfg.Store.DeleteAny(ctx, ids); err != nil {
		p.emit(Event{Type: EventError, Err: fmt.Errorf("queue %s: remove finished jobs: %w", p.cfg.Name, err)})
		return
	}
	for _, id := range ids {
		p.emit(Event{Type: EventRemoved, JobID: id})
	}
}

// terminatedHook calls the Terminated hook for a job that ended terminated, in a
// goroutine the executor's handlers count (Stop waits for it); a hook that panics is
// logged instead of taking the process down.
func (c *completer) terminatedHook(j *job.Job, err error) {
	e := c.p.exec
	e.handlers.Add(1)
	go func() {
		defer e.handlers.Done()
		defer func() {
			if v := recover(); v != nil {
				c.p.cfg.Log.Error("Options.OnTerminated panicked", "job", j.ID, "panic", v)
			}
		}()
		c.p.cfg.Hooks.Terminated(j, err)
	}()
}
