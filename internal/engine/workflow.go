package engine

import (
	"context"
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
	if err := q.checkParents(outside, parents); err != nil {
		return plan, err
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

// checkParents refuses parents outside the call that are not in the table, or that will
// never complete.
func (q *Queue) checkParents(outside []string, parents map[string]rdb.Parent) error {
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
		return fmt.Errorf("%w: not in this call nor in queue %s's table: %s", job.ErrInvalidDependsOn, q.cfg.Name, strings.Join(missing, ", "))
	}
	if len(never) > 0 {
		return fmt.Errorf("%w: they will never complete: %s", job.ErrInvalidDependsOn, strings.Join(never, ", "))
	}
	return nil
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
