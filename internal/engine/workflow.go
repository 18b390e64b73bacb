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
	for _, j := range jobs {
		for _, p := range j.DependsOn() {
			if _, ok := inCall[p]; !ok && !slices.Contains(outside, p) {
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
	for _, j := range jobs {
		ps := j.DependsOn()
		if len(ps) == 0 {
			continue
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

// applyPlan sets a job's status and parent results as plan says, on saved (a copy of
// the job given, whose Fields it must not share).
func (plan addPlan) apply(saved *job.Job) {
	st, ok := plan.status[saved.ID]
	if !ok {
		return
	}
	saved.Status = st
	if res := plan.results[saved.ID]; len(res) > 0 {
		saved.Fields = maps.Clone(saved.Fields)
		saved.Fields[docfmt.ParentResults] = res
	}
}

// ensureWorkflows creates the table's index of workflows the first time this queue adds a
// job with parents, and waits until it is built. Without it no parent's outcome finds its
// children, so a failure fails the add: nothing is written.
func (q *Queue) ensureWorkflows(ctx context.Context, jobs []*job.Job) error {
	if q.dependsIndex.Load() || !slices.ContainsFunc(jobs, func(j *job.Job) bool { return len(j.DependsOn()) > 0 }) {
		return nil
	}
	if err := q.db.EnsureDependsOnIndex(ctx); err != nil {
		return fmt.Errorf("queue %s: create the index of workflows %s, which jobs with parents need: %w", q.cfg.Name, rdb.IndexDependsOn, err)
	}
	q.dependsIndex.Store(true)
	q.workflowsSeen()
	return nil
}

// workflowsSeen tells the queue that its table has jobs with parents: from then on the
// outcomes of its runs release or cancel their children.
func (q *Queue) workflowsSeen() { q.workflows.Store(true) }

// knowsWorkflows reports whether the table has jobs with parents, as far as this queue
// knows: it looks at the table's indexes at most once a minute until it does.
func (q *Queue) knowsWorkflows(ctx context.Context) bool {
	if q.workflows.Load() {
		return true
	}
	now := time.Now()
	if now.UnixNano() < q.workflowsCheck.Load() {
		return false
	}
	q.workflowsCheck.Store(now.Add(deadlineIndexRecheck).UnixNano())
	if has, err := q.db.HasIndex(ctx, rdb.IndexDependsOn); err == nil && has {
		q.workflowsSeen()
		return true
	}
	return false
}

// settle releases the blocked jobs whose parents have all completed (done: parents known
// to have completed, which the table may no longer hold), and cancels, with their
// descendants, those with a parent that will never complete.
func (q *Queue) settle(ctx context.Context, blocked []rdb.Blocked, done map[string]bool) error {
	if len(blocked) == 0 {
		return nil
	}
	var ids []string
	for _, b := range blocked {
		for _, p := range b.Parents {
			if !slices.Contains(ids, p) {
				ids = append(ids, p)
			}
		}
	}
	parents, err := q.db.ReadParents(ctx, ids)
	if err != nil {
		return err
	}
	var release []string
	cancel := make(map[string]string)
	for _, b := range blocked {
		ready, why := true, ""
		for _, p := range b.Parents {
			st, ok := parents[p]
			switch {
			case ok && st.Status == job.Completed:
			case done[p]:
			case !ok:
				why = fmt.Sprintf("parent %s was removed before it completed", p)
			case st.Status == job.Cancelled || st.Status == job.Terminated:
				why = fmt.Sprintf("parent %s was %s", p, st.Status)
			default:
				ready = false
			}
			if why != "" {
				break
			}
		}
		switch {
		case why != "":
			cancel[b.ID] = why
		case ready && len(b.Parents) > 0:
			release = append(release, b.ID)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for chunk := range slices.Chunk(release, flowBatch) {
		ids, err := q.db.Release(ctx, chunk, parents, now)
		if err != nil {
			return err
		}
		for _, id := range ids {
			q.emit(Event{Type: EventReleased, JobID: id})
		}
		if len(ids) > 0 {
			q.wakeProcessing()
		}
	}
	return q.cancelDown(ctx, cancel)
}

// flowBatch is how many children one release or cancel writes at most.
const flowBatch = 1000

// cancelDown cancels the blocked jobs of reasons (id → reason), then, level by level,
// the blocked jobs that wait for them.
func (q *Queue) cancelDown(ctx context.Context, reasons map[string]string) error {
	for len(reasons) > 0 {
		now := time.Now().UTC().Truncate(time.Millisecond)
		var cancelled []string
		for chunk := range slices.Chunk(slices.Sorted(maps.Keys(reasons)), flowBatch) {
			part := make(map[string]string, len(chunk))
			for _, id := range chunk {
				part[id] = reasons[id]
			}
			ids, err := q.db.CancelBlocked(ctx, part, now)
			if err != nil {
				return err
			}
			for _, id := range ids {
				q.log.Info("a job of a workflow was cancelled: a parent will never complete", "job", id, "reason", part[id])
				q.emit(Event{Type: EventCancelled, JobID: id, Reason: part[id]})
			}
			cancelled = append(cancelled, ids...)
		}
		children, err := q.db.BlockedChildren(ctx, cancelled)
		if err != nil {
			return err
		}
		reasons = make(map[string]string, len(children))
		for _, c := range children {
			for _, p := range c.Parents {
				if slices.Contains(cancelled, p) {
					reasons[c.ID] = fmt.Sprintf("parent %s was cancelled", p)
					break
				}
			}
		}
	}
	return nil
}

// parentsFinished releases the children of the jobs completed, and cancels the
// descendants of the jobs failed (id → the reason their children get).
func (q *Queue) parentsFinished(ctx context.Context, completed []string, failed map[string]string) error {
	var errs []error
	if len(completed) > 0 {
		children, err := q.db.BlockedChildren(ctx, completed)
		if err == nil {
			done := make(map[string]bool, len(completed))
			for _, id := range completed {
				done[id] = true
			}
			err = q.settle(ctx, children, done)
		}
		errs = append(errs, err)
	}
	if len(failed) > 0 {
		children, err := q.db.BlockedChildren(ctx, slices.Collect(maps.Keys(failed)))
		if err == nil {
			reasons := make(map[string]string, len(children))
			for _, c := range children {
				for _, p := range c.Parents {
					if why, ok := failed[p]; ok {
						reasons[c.ID] = why
						break
					}
				}
			}
			err = q.cancelDown(ctx, reasons)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// failedReason is the reason the children of job id get when it ended with status (or
// was removed, status "").
func failedReason(id string, status job.Status) string {
	if status == "" {
		return fmt.Sprintf("parent %s was removed before it completed", id)
	}
	return fmt.Sprintf("parent %s was %s", id, status)
}

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
	completed []string
	failed    map[string]string
	running   bool
}

// noteFinished queues the children of job id, which finished with status, for release
// (completed) or cancel (cancelled, terminated, or "" for removed).
func (q *Queue) noteFinished(id string, status job.Status) {
	m := &q.flow
	m.mu.Lock()
	if status == job.Completed {
		m.completed = append(m.completed, id)
	} else {
		if m.failed == nil {
			m.failed = make(map[string]string)
		}
		m.failed[id] = failedReason(id, status)
	}
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

// runFinished settles the children of a job whose run here finished it.
func (q *Queue) runFinished(e processor.Event) {
	if !q.workflows.Load() {
		return
	}
	switch e.Type {
	case processor.EventCompleted:
		if !e.IsRepeating {
			q.noteFinished(e.JobID, job.Completed)
		}
	case processor.EventTerminated:
		q.noteFinished(e.JobID, job.Terminated)
	case processor.EventCancelled:
		q.noteFinished(e.JobID, job.Cancelled)
	}
}

// changeFinished is what a Queue Master does about a change of its changefeed for
// workflows: it settles the children of a job that another queue finished (or removed
// unfinished).
func (q *Queue) changeFinished(act changefeed.Action, old map[string]any) {
	if !q.cfg.Master() || !q.workflows.Load() {
		return
	}
	switch act.Kind {
	case changefeed.Completed:
		if !act.IsRepeating {
			q.noteFinished(act.JobID, job.Completed)
		}
	case changefeed.Cancelled:
		q.noteFinished(act.JobID, job.Cancelled)
	case changefeed.Terminated:
		q.noteFinished(act.JobID, job.Terminated)
	case changefeed.Removed:
		if s, _ := old[docfmt.Status].(string); !job.Status(s).Finished() {
			q.noteFinished(act.JobID, "")
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
