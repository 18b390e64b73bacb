package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The completer writes outcomes in batches: when outcomes are ready and no write is in
// flight it waits up to gatherWindow for the running jobs to finish, then writes every
// outcome ready in one update (rdb.Table.Finish). Outcomes that come while a write is in
// flight go in the next one, so a busy queue writes many per flush, and an outcome waits
// at most for the write already in flight. Its events are raised once its write lands.
//
// A write that fails has an unknown effect: its outcomes are written again after a
// backoff, and the ownership guard with the outcome's stamp makes a second write of one
// that landed count as landed, once.

// maxWriteBackoff bounds the wait between outcome writes that fail.
const maxWriteBackoff = 30 * time.Second

// writeTimeout bounds one outcome write, which Stop cannot cut short.
const writeTimeout = time.Minute

type completer struct {
	p *Processor

	mu   sync.Mutex
	outs []*outcome
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
	return outs
}

// putBack queues again the outcomes of a write that failed, first.
func (c *completer) putBack(outs []*outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outs {
		o.tries++
	}
	c.outs = append(outs, c.outs...)
}

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
			backoff = min(max(2*backoff, 100*time.Millisecond), maxWriteBackoff)
			wait := backoff/2 + rand.N(backoff/2+1)
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
	ctx, cancel := context.WithTimeout(p.hard, writeTimeout)
	defer cancel()
	// The outcomes written for the first time are stamped with this write's time, so
	// that they share one update (see rdb.Outcome); a retry keeps the stamp it had.
	at := now()
	writes := make([]rdb.Outcome, len(outs))
	retried := false
	for i, o := range outs {
		if o.tries == 0 {
			o.write.DateFinished, o.write.Entry.Date, o.write.Trunc.Date = at, at, at
		}
		writes[i] = o.write
		retried = retried || o.tries > 0
	}
	var done []string
	var err error
	if retried {
		// An earlier try may have landed: write those that did not, and count those that
		// did as written.
		done, err = p.cfg.Store.Landed(ctx, writes)
		if err == nil {
			writes = notIn(writes, done)
			if len(writes) > 0 {
				var more []string
				more, err = p.cfg.Store.Finish(ctx, writes)
				done = append(done, more...)
			}
		}
	} else {
		done, err = p.cfg.Store.Finish(ctx, writes)
	}
	if err != nil {
		return err
	}
	c.written(ctx, outs, done)
	return nil
}

// notIn returns the writes whose id is not in ids.
func notIn(writes []rdb.Outcome, ids []string) []rdb.Outcome {
	skip := make(map[string]bool, len(ids))
	for _, id := range ids {
		skip[id] = true
	}
	var out []rdb.Outcome
	for _, w := range writes {
		if !skip[w.ID] {
			out = append(out, w)
		}
	}
	return out
}

// written raises the events of the outcomes that landed, calls the hooks, removes the jobs
// that finished when the queue removes them at once, and tells the producer when the
// earliest job put back for a retry or a repeat falls due.
func (c *completer) written(ctx context.Context, outs []*outcome, done []string) {
	p := c.p
	landed := make(map[string]bool, len(done))
	for _, id := range done {
		landed[id] = true
	}
	var again time.Time
	var remove []string
	for _, o := range outs {
		id := o.write.ID
		if !landed[id] {
			p.cfg.Log.Info("job changed elsewhere while it ran; its outcome is dropped", "job", id)
			continue
		}
		// Recorded before the event, so that whoever sees the event sees the run counted.
		if p.cfg.Hooks.RunEnded != nil {
			p.cfg.Hooks.RunEnded(o.rn.claimed, o.write.Status, o.write.DateFinished)
		}
		p.emit(Event{Type: o.event, JobID: id, IsRepeating: o.repeating, Err: o.err, Reason: o.reason})
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
	p.act.update(func(a *activity) { a.pending -= len(outs) })
	p.announceIdle()
	if !again.IsZero() {
		p.prod.dueAt(again)
	}
	if len(remove) == 0 {
		return
	}
	if p.cfg.Hooks.Removed != nil {
		p.cfg.Hooks.Removed(remove)
	}
	if err := p.cfg.Store.DeleteAny(ctx, remove); err != nil {
		p.emit(Event{Type: EventError, Err: fmt.Errorf("queue %s: remove finished jobs: %w", p.cfg.Name, err)})
		return
	}
	for _, id := range remove {
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
