package engine

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The cancels that flow down a workflow: when a job will never complete (terminated,
// cancelled, or removed unfinished), its blocked children are cancelled, then theirs,
// level by level, each with a reason, and log entry, that names the job whose failure
// started the cascade (see origin.reason).

// origin is the job whose failure cancels its blocked descendants: its id, its name
// when known, and how it ended (cancelled, terminated, or "" for removed unfinished).
type origin struct {
	id, name string
	status   job.Status
}

// reason is the reason, and log message, of a descendant of o that o's failure cancels:
// "parent X was terminated" for a child of o (direct), "ancestor X ("its name") was
// terminated" further down, where o is not among the job's parents.
func (o origin) reason(direct bool) string {
	who := "parent " + o.id
	if !direct {
		who = "ancestor " + o.id
		if o.name != "" && o.name != o.id {
			who += " (" + errtext.Key(o.name) + ")"
		}
	}
	if o.status == "" {
		return who + " was removed before it completed"
	}
	return who + " was " + string(o.status)
}

// cancelDown cancels the blocked jobs of children (id → the parent that will never
// complete), then, level by level, the blocked jobs that wait for them: each with a
// reason, and log entry, that names the job whose failure started the cascade (see
// origin.reason).
func (q *Queue) cancelDown(ctx context.Context, children map[string]origin) error {
	causes, direct := children, true
	for len(causes) > 0 {
		cancelled, err := q.cancelBlocked(ctx, causes, direct)
		if err != nil {
			return err
		}
		if err := q.cancelledElsewhere(ctx, causes, cancelled); err != nil {
			return err
		}
		next, err := q.db.BlockedChildren(ctx, slices.Collect(maps.Keys(cancelled)), nil)
		if err != nil {
			return err
		}
		causes, direct = make(map[string]origin, len(next)), false
		for _, c := range next {
			for _, p := range c.Parents {
				if o, ok := cancelled[p]; ok {
					causes[c.ID] = o
					break
				}
			}
		}
	}
	return nil
}

// cancelledElsewhere adds to cancelled those of the jobs of causes that another writer
// cancelled meanwhile (most often a Queue Master's cascade from the same job, seen on its
// changefeed), so that the cascade goes on below them too: a CancelJob or RemoveJob
// returns once every blocked descendant is cancelled, whoever won each of them.
func (q *Queue) cancelledElsewhere(ctx context.Context, causes, cancelled map[string]origin) error {
	var others []string
	for id := range causes {
		if _, ok := cancelled[id]; !ok {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return nil
	}
	jobs, err := q.db.ReadParents(ctx, others)
	if err != nil {
		return err
	}
	for id, j := range jobs {
		if j.Status == job.Cancelled {
			cancelled[id] = causes[id]
		}
	}
	return nil
}

// cancelBlocked cancels the blocked jobs of causes (id → the origin of its cancel), the
// children of their origins when direct, and returns those it cancelled, with their
// origins.
func (q *Queue) cancelBlocked(ctx context.Context, causes map[string]origin, direct bool) (map[string]origin, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	cancelled := make(map[string]origin, len(causes))
	for chunk := range slices.Chunk(slices.Sorted(maps.Keys(causes)), flowBatch) {
		part := make(map[string]string, len(chunk))
		for _, id := range chunk {
			part[id] = causes[id].reason(direct)
		}
		ids, err := q.db.CancelBlocked(ctx, part, now)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			q.log.Info("a job of a workflow was cancelled: an ancestor will never complete", "job", id, "reason", part[id])
			q.emit(Event{Type: EventCancelled, JobID: id, Reason: part[id]})
			cancelled[id] = causes[id]
		}
	}
	return cancelled, nil
}

// failedParentOf is the first parent of b, among those not known to have completed,
// that will never complete: one missing from parents (removed), cancelled or terminated.
func failedParentOf(b rdb.Blocked, parents map[string]rdb.Parent, known map[string]map[string]any) (origin, bool) {
	for _, p := range b.Parents {
		if _, ok := known[p]; ok {
			continue
		}
		st, ok := parents[p]
		switch {
		case !ok:
			return origin{id: p}, true
		case st.Status == job.Cancelled || st.Status == job.Terminated:
			return origin{id: p, name: st.Name, status: st.Status}, true
		}
	}
	return origin{}, false
}
