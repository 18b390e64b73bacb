package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The release of workflows: a blocked job whose parents have all completed goes waiting
// (released), with its parents' results; one with a parent that will never complete is
// cancelled with its descendants (cascade.go). The flow mover (workflow.go) calls these
// for the jobs that finish here and those a Queue Master sees finish elsewhere; the
// review settles every blocked job at last.

// settle releases the blocked jobs whose parents have all completed, and cancels, with
// their descendants, those with a parent that will never complete; known are parents
// known to have completed, with their completion entries, which are not read again;
// they count as completed even when the table no longer holds them (removed at once),
// and one known without its entry (nil) is read for it. It reads every other parent of
// each job.
func (q *Queue) settle(ctx context.Context, blocked []rdb.Blocked, known map[string]map[string]any) error {
	if len(blocked) == 0 {
		return nil
	}
	var ids []string
	seen := make(map[string]bool)
	for _, b := range blocked {
		for _, p := range b.Parents {
			if e := known[p]; e == nil && !seen[p] {
				seen[p] = true
				ids = append(ids, p)
			}
		}
	}
	parents, err := q.db.ReadParents(ctx, ids)
	if err != nil {
		return err
	}
	var release []string
	cancel := make(map[string]origin)
	for _, b := range blocked {
		if o, failed := failedParentOf(b, parents, known); failed {
			cancel[b.ID] = o
		} else {
			release = append(release, b.ID)
		}
	}
	if _, err := q.release(ctx, release, completions(parents, known), false); err != nil {
		return err
	}
	return q.cancelDown(ctx, cancel)
}

// completions are the completion entries of the parents known to have completed and of
// those read that completed.
func completions(parents map[string]rdb.Parent, known map[string]map[string]any) map[string]map[string]any {
	out := make(map[string]map[string]any, len(parents)+len(known))
	maps.Copy(out, known)
	for id, p := range parents {
		if p.Status == job.Completed {
			out[id] = p.Completion
		}
	}
	return out
}

// release makes those of the blocked jobs ids whose parents are all in done waiting,
// raises their released events, and returns them (see rdb.Table.Release). Batches of
// flowBatch are written two at a time. A queue that processes, idle with a slot free for
// each child, claims them in the same write and runs them (releaseHere). With first, it
// writes only those that never ran (rdb.Table.ReleaseNeverRun), one write whatever it
// finds: the first try at children not read yet, whose parents may not all be done.
func (q *Queue) release(ctx context.Context, ids []string, done map[string]map[string]any, first bool) ([]string, error) {
	if len(ids) == 0 || len(done) == 0 {
		return nil, nil
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if out, ok, err := q.releaseHere(ctx, ids, done, now, first); ok {
		return out, err
	}
	var (
		mu   sync.Mutex
		out  []string
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, 2)
	for chunk := range slices.Chunk(ids, flowBatch) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			release := q.db.Release
			if first {
				release = q.db.ReleaseNeverRun
			}
			released, err := release(ctx, chunk, done, now)
			// Each batch's children are announced, and may run, as soon as it lands: a
			// fan-out of 10,000 starts its first children after one batch, not ten.
			q.released(released, nil)
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			out = append(out, released...)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// releaseHere is release's write when the queue processes and is idle with a slot free
// for each child (processor.Reserve, as AddJob's direct path): it releases the children
// and claims them in one write (rdb.Table.ReleaseClaim), so that a child starts one write
// after its last parent's outcome, where a release, a claim's read and its write would
// follow each other. It reports whether it was taken.
func (q *Queue) releaseHere(ctx context.Context, ids []string, done map[string]map[string]any, now time.Time, first bool) ([]string, bool, error) {
	p := q.processor()
	n := len(ids)
	if p == nil || n > maxReleaseHere || !p.Reserve(n) {
		return nil, false, nil
	}
	var hb time.Duration
	if q.cfg.heartbeats() {
		hb = processor.HeartbeatLease(q.cfg.Heartbeat)
	}
	claim := q.db.ReleaseClaim
	if first {
		claim = q.db.ReleaseClaimNeverRun
	}
	res, err := claim(ctx, q.store(), ids, done, now, hb)
	if err != nil {
		// The write may have landed: the processor looks for those jobs before its next
		// claim, as for an insert of claimed jobs whose answer was lost.
		p.Unreserve(n, ids)
		return nil, true, err
	}
	if res.Unreadable != nil {
		q.log.Warn("a job released and claimed here cannot be read; it is left active for the review", "err", res.Unreadable)
	}
	out := slices.Clone(res.IDs)
	for _, j := range res.Claimed {
		out = append(out, j.ID)
	}
	q.released(out, res.Claimed)
	p.Started(n, res.Claimed)
	return out, true, nil
}

// maxReleaseHere is the most children releaseHere releases at once: a fan-out bigger
// than a worker's free slots goes through the release alone.
const maxReleaseHere = 100

// released raises the released events of the jobs ids and wakes the processor for those
// that it did not claim itself.
func (q *Queue) released(ids []string, claimed []*job.Job) {
	q.flow.noteReleased(ids)
	for _, id := range ids {
		q.emit(Event{Type: EventReleased, JobID: id})
	}
	if len(ids) > len(claimed) {
		q.wakeProcessing()
	}
}

// flowBatch is how many children one release or cancel writes at most.
const flowBatch = 1000

// parentsFinished releases the children of the jobs completed, and cancels the
// descendants of the jobs failed (with reasons naming them). A child whose
// parents are all among those completed here is released with their entries at once
// (a read of the children and a write); one with other parents is released only when a
// few reads find none of them waiting (rdb.Table.Pending), reading them all then.
func (q *Queue) parentsFinished(ctx context.Context, completed map[string]finishedParent, failed map[string]failedParent) error {
	var errs []error
	if len(completed) > 0 {
		errs = append(errs, q.childrenOfCompleted(ctx, completed))
	}
	if len(failed) > 0 {
		// The children they list now and those they listed (a job removed is no longer
		// there to list them).
		var listed []string
		for _, f := range failed {
			listed = append(listed, f.children...)
		}
		children, err := q.db.BlockedChildren(ctx, slices.Collect(maps.Keys(failed)), listed)
		if err == nil {
			causes := make(map[string]origin, len(children))
			for _, c := range children {
				for _, p := range c.Parents {
					if f, ok := failed[p]; ok {
						causes[c.ID] = f.origin
						break
					}
				}
			}
			err = q.cancelDown(ctx, causes)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// childrenOfCompleted releases the children of the jobs completed. A child met for the
// first time is released at once, with no read, when its parents all completed in this
// batch (the write checks it); otherwise its parents are read once and kept
// (flowMover.parents). A child whose parents are all known here to have completed
// (flowMover.seen) is then released with the entries known; for the others, one parent
// not known here to have completed is looked at (one small read for all of them): the
// one that held the child back last time, or another when that one has completed here
// since. Only when it has completed elsewhere are the other parents not known here read,
// until one has not (rdb.Table.Pending); when none has not, the child is settled,
// reading only those. So a join of a thousand parents that complete here reads one
// parent per batch of completions, not the hundreds still running.
func (q *Queue) childrenOfCompleted(ctx context.Context, completed map[string]finishedParent) error {
	m := &q.flow
	blocked, fresh, batch := m.noteBatch(completed)
	// First, with no read, the new children whose parents all completed in this batch;
	// the others are read once.
	released, err := q.release(ctx, fresh, batch, true)
	if err != nil {
		return err
	}
	fresh = slices.DeleteFunc(fresh, func(id string) bool { return slices.Contains(released, id) })
	read, err := q.db.ReadBlocked(ctx, fresh)
	if err != nil {
		return err
	}
	direct, check, entries, probe := m.sortChildren(read, append(blocked, fresh...))
	if _, err := q.release(ctx, direct, entries, false); err != nil {
		return err
	}
	m.forget(direct)
	done, err := q.db.Completed(ctx, slices.Collect(maps.Keys(probe)))
	if err != nil {
		return err
	}
	unheld := m.unheldOf(check, done)
	pending, err := q.db.Pending(ctx, unheld)
	if err != nil {
		return err
	}
	ready, known := m.readyOf(unheld, pending)
	for id, f := range completed {
		if _, ok := known[id]; !ok {
			known[id] = f.entry // completed here or seen complete: counts even if removed
		}
	}
	ids := make([]string, len(ready))
	for i, b := range ready {
		ids[i] = b.ID
	}
	m.forget(ids)
	return q.settle(ctx, ready, known)
}

// noteBatch records the completion entries of a batch of completed jobs (seen), and
// returns their children not released here yet: those whose parents are kept (blocked),
// the others (fresh), and the batch's entries.
func (m *flowMover) noteBatch(completed map[string]finishedParent) (blocked, fresh []string, batch map[string]map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil || len(m.seen) > maxSeen {
		m.seen = make(map[string]map[string]any)
	}
	if m.parents == nil || m.kept > maxKept {
		m.parents, m.waitingOn, m.kept = make(map[string][]string), make(map[string]string), 0
	}
	batch = make(map[string]map[string]any, len(completed))
	inIDs := make(map[string]bool)
	for id, f := range completed {
		for _, c := range f.children {
			if inIDs[c] || m.releasedHere[c] {
				continue
			}
			inIDs[c] = true
			if _, ok := m.parents[c]; ok {
				blocked = append(blocked, c)
			} else {
				fresh = append(fresh, c)
			}
		}
		if f.entry != nil {
			m.seen[id] = f.entry
			batch[id] = f.entry
		}
	}
	return blocked, fresh, batch
}

// sortChildren keeps the parents of the blocked jobs read, and sorts the children ids:
// those whose parents are all seen here to have completed (direct, with their entries),
// and the others (check), each with one parent not seen here to look at (probe): the one
// that held the child back last time, or, when that one has completed here since,
// another (the last in the list); only when it has completed are the others read.
func (m *flowMover) sortChildren(read []rdb.Blocked, ids []string) (direct, check []string, entries map[string]map[string]any, probe map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keepParents(read)
	entries, probe = make(map[string]map[string]any), make(map[string]bool)
	for _, id := range ids {
		parents, ok := m.parents[id]
		if !ok {
			continue // not blocked when read
		}
		all := true
		for _, p := range parents {
			if e, ok := m.seen[p]; ok {
				entries[p] = e
			} else {
				all = false
			}
		}
		if all {
			direct = append(direct, id)
			continue
		}
		w := m.waitingOn[id]
		if _, ok := m.seen[w]; ok || w == "" {
			w = lastUnseen(parents, m.seen)
			m.waitingOn[id] = w
		}
		probe[w] = true
		check = append(check, id)
	}
	return direct, check, entries, probe
}

// unheldOf is the children of check whose parent looked at has completed (done), each
// with its parents not seen here, to read.
func (m *flowMover) unheldOf(check []string, done map[string]bool) []rdb.Blocked {
	m.mu.Lock()
	defer m.mu.Unlock()
	var unknown []rdb.Blocked
	for _, id := range check {
		if !done[m.waitingOn[id]] {
			continue // still held back by the parent looked at
		}
		var rest []string
		for _, p := range m.parents[id] {
			if _, ok := m.seen[p]; !ok {
				rest = append(rest, p)
			}
		}
		unknown = append(unknown, rdb.Blocked{ID: id, Parents: rest})
	}
	return unknown
}

// readyOf is the children of unknown that no parent holds back (pending names the one that
// does), each with all its parents, to settle, and the entries of their parents seen here.
func (m *flowMover) readyOf(unknown []rdb.Blocked, pending map[string]string) (ready []rdb.Blocked, known map[string]map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known = make(map[string]map[string]any)
	for _, b := range unknown {
		if w := pending[b.ID]; w != "" {
			m.waitingOn[b.ID] = w
			continue
		}
		parents := m.parents[b.ID]
		ready = append(ready, rdb.Blocked{ID: b.ID, Parents: parents}) // with all its parents
		for _, p := range parents {
			if e, ok := m.seen[p]; ok {
				known[p] = e
			}
		}
	}
	return ready, known
}

// lastUnseen is the last of parents not in seen ("" when none is not).
func lastUnseen(parents []string, seen map[string]map[string]any) string {
	for _, p := range slices.Backward(parents) {
		if _, ok := seen[p]; !ok {
			return p
		}
	}
	return ""
}

// keepParents keeps the parents of the blocked jobs read, for the next completions of
// their parents (beyond maxKept parent ids, they are read again). Call with m.mu held.
func (m *flowMover) keepParents(read []rdb.Blocked) {
	for _, b := range read {
		m.parents[b.ID] = b.Parents
		m.kept += len(b.Parents)
	}
}

// forget drops the children released or settled from what keepParents kept.
func (m *flowMover) forget(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		m.kept -= len(m.parents[id])
		delete(m.parents, id)
		delete(m.waitingOn, id)
	}
}

// maxKept bounds the parent ids a queue keeps for blocked children.
const maxKept = 100000

// maxSeen bounds the completions a queue keeps for the children still blocked on other
// parents; beyond it they are read again.
const maxSeen = 20000

// settleBlocked is the Master's review of workflows: it settles up to reviewBlocked
// blocked jobs (see settle), so that no child waits for ever for a release that a worker
// dying between a parent's outcome and its children's release did not make.
func (q *Queue) settleBlocked(ctx context.Context) error {
	if !q.knowsWorkflows(ctx) {
		return nil
	}
	blocked, err := q.db.BlockedJobs(ctx, reviewBlocked)
	if err != nil {
		return err
	}
	return q.settle(ctx, blocked, nil)
}

// reviewBlocked is how many blocked jobs one review settles at most.
const reviewBlocked = 1000
