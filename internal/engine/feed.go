package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// maxFeedBackoff bounds the wait between attempts to reopen a failed changefeed.
const maxFeedBackoff = 10 * time.Second

// removalMemory is how long the queue remembers the jobs it deleted, to recognise their
// deletion when the changefeed reports it.
const removalMemory = time.Minute

// follow keeps the changefeed open until Stop. When it fails (server restart, network
// cut) it raises an error event and tries again with backoff, re-asserting the database,
// table and indexes that a restarted server may have lost; once it is back, the queue
// claims again and catches up with the State Document, since changes made meanwhile are
// lost. It opens the worker's feed or the whole one as feedWidth says, and reopens it
// with the other width, at once, when feedWidth switches it. first receives the outcome
// of the first subscription, which Ready waits for.
func (q *Queue) follow(ctx context.Context, first chan<- error) {
	defer q.width.stop()
	backoff := time.Duration(0)
	opened, switched := false, false
	for {
		fctx, cancel := context.WithCancel(ctx)
		wide := q.width.begin(cancel, q.cfg.LocalEventsOnly)
		subscribed := func() {
			backoff = 0
			if !opened {
				opened = true
				q.width.opened()
				first <- nil
				return
			}
			switch {
			case switched && wide:
				q.log.Info("changefeed widened for a listener of other queues' events")
			case switched:
				q.log.Info("changefeed narrowed: no listener of other queues' events is left")
			default:
				q.log.Info("changefeed reopened")
			}
			// The catch-up is done before a listener waiting for the whole feed goes on,
			// so that its next steps do not race with it (a job added idle is claimed
			// in its insert only while the queue reads nothing).
			q.resync()
			q.width.opened()
		}
		follow := changefeed.FollowWorker
		if wide {
			follow = changefeed.FollowQueue
		}
		err := follow(fctx, q.session, q.db.Term(), q.id, q.cfg.RunOpts, subscribed, q.onChange)
		switched = q.width.end()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if switched {
			continue
		}
		err = fmt.Errorf("queue %s: changefeed: %w", q.cfg.Name, err)
		if !opened {
			first <- err
			return
		}
		q.log.Warn("changefeed failed; reopening", "err", err)
		q.emit(Event{Type: EventError, Err: err})
		for {
			backoff = min(max(2*backoff, 100*time.Millisecond), maxFeedBackoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			err := dbinit.Assert(ctx, q.tableTarget())
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			q.emit(Event{Type: EventError, Err: fmt.Errorf("queue %s: reconnect: %w", q.cfg.Name, err)})
		}
	}
}

// resync catches up after the feed was down, since the changes made meanwhile are lost:
// it ends the runs of jobs cancelled or taken away meanwhile, follows a global pause or
// resume, and claims again.
func (q *Queue) resync() {
	if p := q.processor(); p != nil {
		if err := p.DropDisowned(q.feed.Context()); err != nil {
			q.log.Warn("checking the running jobs failed", "err", err)
		}
	}
	state, err := q.db.State(q.feed.Context())
	if err != nil {
		q.log.Warn("reading the State Document failed", "err", err)
	}
	switch {
	case state == "paused" && !q.Paused():
		q.pauseGlobally()
	case state == "active" && q.pausedGlobally():
		q.resume(true)
	}
	q.wakeProcessing()
}

// pauseGlobally follows a global pause: the queue is paused before the next change is
// read, so that a resume right behind it cannot be overtaken; the paused event follows
// when its running jobs are done, unless a resume came first.
func (q *Queue) pauseGlobally() {
	resumed := q.beginPause(true)
	q.feed.Go(func(ctx context.Context) { _ = q.finishPause(ctx, true, resumed) })
}

// onChange acts on one change of the feed.
func (q *Queue) onChange(c changefeed.Change) {
	act := changefeed.Classify(c, q.id)
	if d, ok := c.New[docfmt.Deadline]; ok && d != nil {
		q.deadlineSeen() // perhaps added by another process, which made the index
	}
	if _, ok := c.New[docfmt.DependsOn]; ok {
		q.workflowsSeen() // added by another process
	}
	q.changeFinished(act, c)
	switch act.Kind {
	case changefeed.Ignore:
	case changefeed.Paused:
		q.pauseGlobally()
	case changefeed.Resumed:
		q.resume(true)
	case changefeed.Reviewed:
		q.emitFrom(act.QueueID, Event{Type: EventReviewed, Review: &ReviewResult{}})
		q.wakeProcessing()
	case changefeed.InvalidState:
		q.emit(Event{Type: EventError, Err: fmt.Errorf("%w (changed by %s)", ErrInvalidState, act.QueueID)})
	case changefeed.Removed:
		if !q.forgetRemoval(act.JobID) && !q.cfg.LocalEventsOnly {
			q.emitFrom("", Event{Type: EventRemoved, JobID: act.JobID})
		}
	default:
		if q.cfg.LocalEventsOnly {
			break // and the feed carried only some of them
		}
		q.emitFrom(act.QueueID, Event{Type: string(act.Kind), JobID: act.JobID, Progress: act.Progress, IsRepeating: act.IsRepeating, Reason: act.Reason})
	}
	if p := q.processor(); p != nil && slotsMayBeFree(c) {
		// A run ended elsewhere, or a job of a sequence finished or went: running slots
		// may be free, or the next job of a sequence may run, for jobs held back here.
		name, _ := c.Old[docfmt.Name].(string)
		group, _ := c.Old[docfmt.Group].(string)
		seq, _ := c.Old[docfmt.Sequence].(string)
		p.RunEndedElsewhere(name, group, seq)
	}
	if p := q.processor(); p != nil && act.JobID != "" {
		// Another queue cancelled, removed or failed (in a review) a job running here, or
		// claimed it again: that run has lost it.
		upTo := act.ProcessCount
		if act.Active {
			upTo--
		}
		p.Disown(act.JobID, upTo, job.ErrCancelled)
		q.hintOrTake(p, act, c.New)
	}
}

// hintOrTake tells the processor of a job that another queue left claimable, waiting or
// failed (it may claim it by id, without reading the table), or that is claimable no
// more.
func (q *Queue) hintOrTake(p *processor.Processor, act changefeed.Action, doc map[string]any) {
	status, _ := doc[docfmt.Status].(string)
	if status != string(job.Waiting) && status != string(job.Failed) {
		p.Taken(act.JobID)
		return
	}
	j, err := rdb.ClaimableWithoutLog(doc)
	if err != nil {
		p.Wake() // a read of the table reports it
		return
	}
	p.Hint(j, act.QueueID)
}

// noteRemovals remembers jobs this queue deleted, so that their deletion seen on the feed
// is not raised a second time.
func (q *Queue) noteRemovals(ids []string) {
	if !q.cfg.ChangeFeed {
		return
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, at := range q.removed {
		if now.Sub(at) > removalMemory {
			delete(q.removed, id)
		}
	}
	for _, id := range ids {
		q.removed[id] = now
	}
}

// forgetRemoval reports whether this queue deleted the job, forgetting it.
func (q *Queue) forgetRemoval(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.removed[id]
	delete(q.removed, id)
	return ok
}

// subscribeFirst opens the changefeed for the first time, for initialize.
func (q *Queue) subscribeFirst(ctx context.Context) error {
	first := make(chan error, 1)
	q.feed.Go(func(ctx context.Context) { q.follow(ctx, first) })
	select {
	case err := <-first:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slotsMayBeFree reports whether change c ends a run (active before, not after), or
// finishes or removes a job of a sequence: what may let jobs held back for a running slot
// or for their turn in a sequence run.
func slotsMayBeFree(c changefeed.Change) bool {
	old, _ := c.Old[docfmt.Status].(string)
	if old == "" {
		return false
	}
	now, _ := c.New[docfmt.Status].(string)
	if old == string(job.Active) && now != string(job.Active) {
		return true
	}
	if _, ok := c.Old[docfmt.Sequence].(string); !ok {
		return false
	}
	return c.New == nil || now != old && job.Status(now).Finished()
}
