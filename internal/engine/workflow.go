package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Workflows (job.SetDependsOn). A job with parents is added blocked, unless its parents
// are all in the table and completed. Who releases or cancels it:
//   - the queue that adds it, right after the insert, for parents that finished meanwhile;
//   - the queue whose worker finishes a parent, right after the outcome (flowMover);
//   - a Queue Master, for parents finished by other queues (its changefeed: a Node.js
//     worker, say) and, at each review, for any blocked job whose parents are done (a
//     worker that died between a parent's outcome and its children's release);
//   - CancelJob and RemoveJob, for the descendants of the jobs they cancel or remove.
//
// Each release and cancel is a compare-and-set on the blocked status (rdb.Release,
// rdb.CancelBlocked): a child is released once, whoever sees its parents finish.

// addPlan is what AddJob writes for the jobs of a call that have parents: their status
// (blocked, or waiting when every parent completed already), and the completions of the
// parents of those added waiting.
type addPlan struct {
	status  map[string]job.Status
	results map[string]map[string]any
	blocked []rdb.Blocked
	// children are the children of the parents in the call, and outside those of the
	// parents in the table (docfmt.Children).
	children, outside map[string][]string
}

// planWorkflows checks the parents of the jobs of an AddJob call: each is in the call or
// in the table, none is a cycle, none will never complete.
func (q *Queue) planWorkflows(ctx context.Context, jobs []*job.Job) (addPlan, error) {
	var plan addPlan
	inCall := make(map[string]*job.Job, len(jobs))
	for _, j := range jobs {
		inCall[j.ID] = j
	}
	var outside []string
	seen := make(map[string]bool)
	for _, j := range jobs {
		for _, p := range j.DependsOn() {
			if _, ok := inCall[p]; !ok && !seen[p] {
				seen[p] = true
				outside = append(outside, p)
			}
		}
	}
	if len(outside) == 0 && !slices.ContainsFunc(jobs, func(j *job.Job) bool { return len(j.DependsOn()) > 0 }) {
		return plan, nil
	}
	if cycle := findCycle(jobs, inCall); len(cycle) > 0 {
		return plan, fmt.Errorf("%w: a cycle: %s", job.ErrInvalidDependsOn, strings.Join(cycle, " → "))
	}
	parents, err := q.db.ReadParents(ctx, outside)
	if err != nil {
		return plan, err
	}
	var missing, never []string
	for _, p := range outside {
		st, ok := parents[p]
		switch {
		case !ok:
			missing = append(missing, p)
		case st.Status == job.Cancelled || st.Status == job.Terminated:
			never = append(never, fmt.Sprintf("%s (%s)", p, st.Status))
		}
	}
	if len(missing) > 0 {
		return plan, fmt.Errorf("%w: not in this call nor in queue %s's table: %s", job.ErrInvalidDependsOn, q.cfg.Name, strings.Join(missing, ", "))
	}
	if len(never) > 0 {
		return plan, fmt.Errorf("%w: they will never complete: %s", job.ErrInvalidDependsOn, strings.Join(never, ", "))
	}
	plan.status = make(map[string]job.Status)
	plan.results = make(map[string]map[string]any)
	plan.children, plan.outside = make(map[string][]string), make(map[string][]string)
	for _, j := range jobs {
		ps := j.DependsOn()
		if len(ps) == 0 {
			continue
		}
		for _, p := range ps {
			if _, ok := inCall[p]; ok {
				plan.children[p] = append(plan.children[p], j.ID)
			} else {
				plan.outside[p] = append(plan.outside[p], j.ID)
			}
		}
		done := make(map[string]any, len(ps))
		for _, p := range ps {
			if st, ok := parents[p]; ok && st.Status == job.Completed {
				if st.Completion != nil {
					done[p] = st.Completion
				}
				continue
			}
			done = nil
			break
		}
		if done != nil {
			plan.status[j.ID] = job.Waiting
			plan.results[j.ID] = done
			continue
		}
		plan.status[j.ID] = job.Blocked
		plan.blocked = append(plan.blocked, rdb.Blocked{ID: j.ID, Parents: ps})
	}
	return plan, nil
}

// findCycle returns the ids of a cycle among the parents in the call, first id last
// again, or nil.
func findCycle(jobs []*job.Job, inCall map[string]*job.Job) []string {
	const (
		unseen = iota
		open
		done
	)
	state := make(map[string]int, len(jobs))
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case open:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case done:
			return nil
		}
		state[id] = open
		path = append(path, id)
		for _, p := range inCall[id].DependsOn() {
			if _, ok := inCall[p]; ok {
				if c := visit(p); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	for _, j := range jobs {
		if c := visit(j.ID); c != nil {
			return c
		}
	}
	return nil
}

// apply sets a job's status, parent results and children as plan says, on saved (a copy
// of the job given, whose Fields it must not share).
func (plan addPlan) apply(saved *job.Job) {
	if st, ok := plan.status[saved.ID]; ok {
		saved.Status = st
	}
	res, kids := plan.results[saved.ID], plan.children[saved.ID]
	if len(res) == 0 && len(kids) == 0 {
		return
	}
	saved.Fields = maps.Clone(saved.Fields)
	if saved.Fields == nil {
		saved.Fields = make(map[string]any)
	}
	if len(res) > 0 {
		saved.Fields[docfmt.ParentResults] = res
	}
	if len(kids) > 0 {
		list := make([]any, len(kids))
		for i, id := range kids {
			list[i] = id
		}
		saved.Fields[docfmt.Children] = list
	}
}

// recordChildren adds the children of the call to its parents in the table, before they
// are written, and keeps them here too, for a parent running here now, whose claimed copy
// does not list them.
func (q *Queue) recordChildren(ctx context.Context, plan addPlan) error {
	if len(plan.outside) == 0 {
		return nil
	}
	if err := q.db.AddChildren(ctx, plan.outside); err != nil {
		return err
	}
	q.flow.mu.Lock()
	defer q.flow.mu.Unlock()
	if q.flow.late == nil || len(q.flow.late) > maxLate {
		q.flow.late = make(map[string][]string)
	}
	for p, kids := range plan.outside {
		q.flow.late[p] = append(q.flow.late[p], kids...)
	}
	return nil
}

// maxLate bounds the children this queue keeps for parents in the table: beyond it, the
// children of a parent that completes here are released by a Queue Master.
const maxLate = 10000

// noteWorkflows tells the queue that its table has jobs with parents when jobs has one.
func (q *Queue) noteWorkflows(jobs []*job.Job) {
	if slices.ContainsFunc(jobs, func(j *job.Job) bool { return len(j.DependsOn()) > 0 }) {
		q.workflowsSeen()
	}
}

// workflowsSeen tells the queue that its table has jobs with parents: from then on the
// outcomes of its runs release or cancel their children.
func (q *Queue) workflowsSeen() { q.workflows.Store(true) }

// knowsWorkflows reports whether the table has jobs with parents, as far as this queue
// knows: until it does, it looks for a blocked job at most once a minute (a table
// without one has no child to release or cancel).
func (q *Queue) knowsWorkflows(ctx context.Context) bool {
	if q.workflows.Load() {
		return true
	}
	now := time.Now()
	if now.UnixNano() < q.workflowsCheck.Load() {
		return false
	}
	q.workflowsCheck.Store(now.Add(deadlineIndexRecheck).UnixNano())
	if has, err := q.db.HasBlocked(ctx); err == nil && has {
		q.workflowsSeen()
		return true
	}
	return false
}

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
	var ids []string
	inIDs := make(map[string]bool)
	batch := make(map[string]map[string]any, len(completed))
	m := &q.flow
	m.mu.Lock()
	if m.seen == nil || len(m.seen) > maxSeen {
		m.seen = make(map[string]map[string]any)
	}
	if m.parents == nil || m.kept > maxKept {
		m.parents, m.waitingOn, m.kept = make(map[string][]string), make(map[string]string), 0
	}
	for id, f := range completed {
		for _, c := range f.children {
			if !inIDs[c] && !m.releasedHere[c] {
				inIDs[c] = true
				ids = append(ids, c)
			}
		}
		if f.entry != nil {
			m.seen[id] = f.entry
			batch[id] = f.entry
		}
	}
	var blocked, fresh []string
	for _, id := range ids {
		if _, ok := m.parents[id]; ok {
			blocked = append(blocked, id)
		} else {
			fresh = append(fresh, id)
		}
	}
	m.mu.Unlock()
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
	m.mu.Lock()
	m.keepParents(read)

	var direct, check []string
	entries := make(map[string]map[string]any)
	probe := make(map[string]bool)
	for _, id := range append(blocked, fresh...) {
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
		// One parent not seen here is looked at: the one that held the child back last
		// time, or, when that one has completed here since, another (the last in the
		// list); only when it has completed are the others read.
		w := m.waitingOn[id]
		if _, ok := m.seen[w]; ok || w == "" {
			w = lastUnseen(parents, m.seen)
			m.waitingOn[id] = w
		}
		probe[w] = true
		check = append(check, id)
	}
	m.mu.Unlock()
	if _, err := q.release(ctx, direct, entries, false); err != nil {
		return err
	}
	m.forget(direct)
	done, err := q.db.Completed(ctx, slices.Collect(maps.Keys(probe)))
	if err != nil {
		return err
	}
	var unknown []rdb.Blocked
	m.mu.Lock()
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
	m.mu.Unlock()
	pending, err := q.db.Pending(ctx, unknown)
	if err != nil {
		return err
	}
	var ready []rdb.Blocked
	known := make(map[string]map[string]any)
	m.mu.Lock()
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
	m.mu.Unlock()
	for id, f := range completed {
		if _, ok := known[id]; !ok {
			known[id] = f.entry // completed here or seen complete: counts even if removed
		}
	}
	m.forget(slices.Collect(func(yield func(string) bool) {
		for _, b := range ready {
			if !yield(b.ID) {
				return
			}
		}
	}))
	return q.settle(ctx, ready, known)
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

// flowMover releases and cancels the children of the jobs that finish here or that a
// Master's changefeed sees finish elsewhere, in batches, on a goroutine of the queue's
// background service: the outcome path never waits for it.
type flowMover struct {
	mu        sync.Mutex
	completed map[string]finishedParent
	failed    map[string]failedParent
	running   bool
	// late are the children this queue added to parents already in the table.
	late map[string][]string
	// seen are the completion entries of parents completed here, for children that wait
	// for others: a join of a thousand parts then reads only the parts not seen here.
	seen map[string]map[string]any
	// parents are the parents of the blocked children met here (kept of them in all),
	// and waitingOn the parent that held each back when last looked at.
	parents   map[string][]string
	waitingOn map[string]string
	kept      int
	// releasedHere are the children released here (up to maxSeen of them): a Master's
	// changefeed, which sees the parents that completed here complete too, does not
	// make their release try again.
	releasedHere map[string]bool
}

// noteReleased records the children ids released here.
func (m *flowMover) noteReleased(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.releasedHere == nil || len(m.releasedHere)+len(ids) > maxSeen {
		m.releasedHere = make(map[string]bool, len(ids))
	}
	for _, id := range ids {
		m.releasedHere[id] = true
	}
}

// finishedParent is a completed job whose children are to be released: their ids, and
// its completion entry when it is known (completed here).
type finishedParent struct {
	children []string
	entry    map[string]any
}

// failedParent is a job that finished without completing (cancelled, terminated or
// removed) whose blocked descendants are to be cancelled: itself, the origin of their
// cancel, and the children it listed when it finished, when known.
type failedParent struct {
	origin   origin
	children []string
}

// noteCompleted queues the children of job id, which completed with the completion entry
// entry (nil when not known), for release.
func (q *Queue) noteCompleted(id string, children []string, entry map[string]any) {
	m := &q.flow
	m.mu.Lock()
	children = append(slices.Clone(children), m.late[id]...)
	delete(m.late, id)
	if len(children) == 0 {
		m.mu.Unlock()
		return
	}
	if m.completed == nil {
		m.completed = make(map[string]finishedParent)
	}
	if entry == nil {
		// A Master's changefeed also sees the jobs completed here, after their runs'
		// events and without their entries: the entry known is kept.
		if f, ok := m.completed[id]; ok {
			entry = f.entry
		} else if e, ok := m.seen[id]; ok {
			entry = e
		}
	}
	m.completed[id] = finishedParent{children: children, entry: entry}
	m.mu.Unlock()
	q.startMover()
}

// noteFailed queues the descendants of job o, which finished without completing
// (cancelled, terminated, or removed), listing children, for cancel.
func (q *Queue) noteFailed(o origin, children []string) {
	m := &q.flow
	m.mu.Lock()
	children = append(slices.Clone(children), m.late[o.id]...)
	delete(m.late, o.id)
	if m.failed == nil {
		m.failed = make(map[string]failedParent)
	}
	m.failed[o.id] = failedParent{origin: o, children: children}
	m.mu.Unlock()
	q.startMover()
}

func (q *Queue) startMover() {
	m := &q.flow
	m.mu.Lock()
	start := !m.running
	m.running = true
	m.mu.Unlock()
	if start {
		q.bg.Go(q.moveFlows)
	}
}

// moveFlows settles the noted jobs' children until none are left.
func (q *Queue) moveFlows(ctx context.Context) {
	m := &q.flow
	for {
		m.mu.Lock()
		completed, failed := m.completed, m.failed
		m.completed, m.failed = nil, nil
		if len(completed) == 0 && len(failed) == 0 || ctx.Err() != nil {
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		if err := q.parentsFinished(ctx, completed, failed); err != nil && ctx.Err() == nil {
			q.log.Warn("releasing or cancelling the children of finished jobs failed; a Queue Master's review does it", "err", err)
		}
	}
}

// childrenOf is the children a job lists (docfmt.Children).
func childrenOf(fields map[string]any) []string {
	list, _ := fields[docfmt.Children].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if id, ok := v.(string); ok {
			out = append(out, id)
		}
	}
	return out
}

// jobChildren is the children j lists (none for nil).
func jobChildren(j *job.Job) []string {
	if j == nil {
		return nil
	}
	return childrenOf(j.Fields)
}

// childrenToFollow is processor.Config.Children: the children a job lists, on a table
// with workflows. The outcome's write of a parent releases and claims those it can run
// at once (rdb.Table.FinishRelease); runFinished settles the others.
func (q *Queue) childrenToFollow(j *job.Job) []string {
	if !q.workflows.Load() {
		return nil
	}
	return childrenOf(j.Fields)
}

// runFinished settles the children of a job whose run here finished it.
func (q *Queue) runFinished(e processor.Event) {
	if !q.workflows.Load() {
		return
	}
	switch e.Type {
	case processor.EventCompleted:
		if !e.IsRepeating && e.Job != nil {
			children := childrenOf(e.Job.Fields)
			if len(e.Claimed) > 0 {
				// Released and claimed by the outcome's write (childrenToFollow).
				claimed := make(map[string]bool, len(e.Claimed))
				for _, j := range e.Claimed {
					claimed[j.ID] = true
				}
				q.released(slices.Collect(maps.Keys(claimed)), e.Claimed)
				children = slices.DeleteFunc(children, func(id string) bool { return claimed[id] })
			}
			q.noteCompleted(e.JobID, children, e.Entry.Document())
		}
	case processor.EventTerminated, processor.EventCancelled:
		o := origin{id: e.JobID, status: job.Terminated}
		if e.Type == processor.EventCancelled {
			o.status = job.Cancelled
		}
		if e.Job != nil {
			o.name = e.Job.Name
		}
		q.noteFailed(o, jobChildren(e.Job))
	}
}

// changeFinished is what a Queue Master does about a change of its changefeed for
// workflows: it settles the children of a job that another queue finished (or removed
// unfinished).
func (q *Queue) changeFinished(act changefeed.Action, c changefeed.Change) {
	if !q.cfg.Master() || !q.workflows.Load() {
		return
	}
	switch act.Kind {
	case changefeed.Completed:
		if !act.IsRepeating {
			q.noteCompleted(act.JobID, childrenOf(c.New), nil)
		}
	case changefeed.Cancelled, changefeed.Terminated:
		status := job.Cancelled
		if act.Kind == changefeed.Terminated {
			status = job.Terminated
		}
		name, _ := c.New[docfmt.Name].(string)
		q.noteFailed(origin{id: act.JobID, name: name, status: status}, childrenOf(c.New))
	case changefeed.Removed:
		if s, _ := c.Old[docfmt.Status].(string); !job.Status(s).Finished() {
			name, _ := c.Old[docfmt.Name].(string)
			q.noteFailed(origin{id: act.JobID, name: name}, childrenOf(c.Old))
		}
	}
}

// Children is queue.Queue.Children, whose doc says what it does.
func (q *Queue) Children(ctx context.Context, id string) ([]*job.Job, error) {
	ids, end, err := q.beginWithIDs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	defer end()
	jobs, err := q.db.Children(ctx, q.store(), ids[0], MaxChildren)
	if err != nil {
		return nil, fmt.Errorf("queue %s: read the children of job %s: %w", q.cfg.Name, id, err)
	}
	return jobs, nil
}

// MaxChildren is the most children Children returns.
const MaxChildren = 1000
