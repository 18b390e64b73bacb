package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// add makes the jobs of docs (versions of the watched table) and adds those not added yet.
// A version it cannot use is skipped (see jobOf); a write that fails is an error, and the
// cursor does not move past its versions.
func (tr *triggerRun) add(ctx context.Context, docs []map[string]any) error {
	changes := make([]triggerChange, len(docs))
	for i, doc := range docs {
		changes[i] = triggerChange{doc: doc}
	}
	return tr.addChanges(ctx, changes)
}

// addChanges is add of versions and of the deletions the feed saw.
func (tr *triggerRun) addChanges(ctx context.Context, changes []triggerChange) error {
	var jobs []*job.Job
	seen := make(map[string]bool, len(changes))
	for _, c := range changes {
		doc := c.doc
		j, err := tr.jobOf(ctx, c)
		switch {
		case err != nil:
			tr.skip(doc["id"], err)
		case j != nil && !seen[j.ID]:
			seen[j.ID] = true
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return tr.timed(ctx, func(ctx context.Context) error { return tr.write(ctx, jobs, true) })
}

// write adds those of jobs that are not in the table yet. A job AddJob refuses (a parent
// missing, say) fails the whole call: the jobs are then added one by one, and the one
// refused is skipped. again allows one more try after a job was found added meanwhile
// (by another runner, in a failover).
func (tr *triggerRun) write(ctx context.Context, jobs []*job.Job, again bool) error {
	jobs, err := tr.absent(ctx, jobs)
	if err != nil || len(jobs) == 0 {
		return err
	}
	_, err = tr.q.AddJob(ctx, jobs...)
	switch {
	case err == nil:
		tr.made += int64(len(jobs))
		return nil
	case errors.Is(err, job.ErrExists) && again:
		return tr.write(ctx, jobs, false)
	case errors.Is(err, job.ErrInvalid) && len(jobs) > 1:
		for _, j := range jobs {
			if err := tr.write(ctx, []*job.Job{j}, again); err != nil {
				return err
			}
		}
		return nil
	case errors.Is(err, job.ErrInvalid):
		tr.skip(triggerDoc(jobs[0]), fmt.Errorf("AddJob refused its job: %w", err))
		return nil
	}
	return fmt.Errorf("trigger %s: add the jobs of %d versions: %w", tr.t.Name, len(jobs), err)
}

// triggerDoc is the document id a trigger's job was made for.
func triggerDoc(j *job.Job) any {
	if m, ok := j.Fields[docfmt.Trigger].(map[string]any); ok {
		return m["doc"]
	}
	return j.ID
}

// jobOf is the job of one version, with its derived id and the field that says where it
// comes from; nil, nil when the filter or the Job func makes none. An error says why the
// version is skipped: no version, a func that failed or panicked, a job AddJob would
// refuse.
func (tr *triggerRun) jobOf(ctx context.Context, c triggerChange) (j *job.Job, err error) {
	doc := c.doc
	v, err := versionOf(doc, tr.t.Field)
	if err != nil && !c.deleted {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			j, err = nil, fmt.Errorf("the trigger's func panicked: %v", p)
		}
	}()
	switch {
	case c.deleted:
		j, err = tr.t.Deleted(ctx, maps.Clone(doc))
	case tr.t.Filter != nil && !tr.t.Filter(maps.Clone(doc)):
		return nil, nil
	default:
		j, err = tr.t.Job(ctx, maps.Clone(doc))
	}
	if err != nil || j == nil {
		if err != nil {
			err = fmt.Errorf("its func failed: %w", err)
		}
		return nil, err
	}
	mark := map[string]any{"name": tr.t.Name, "doc": doc["id"], "at": v}
	if j.UniqueKey() == "" {
		j.ID = triggerJobID(tr.t.Name, doc["id"], v)
		if c.deleted {
			j.ID = triggerJobID(tr.t.Name+"\x00deleted", doc["id"], v)
			mark["deleted"] = true
		}
	}
	j.Fields = maps.Clone(j.Fields)
	if j.Fields == nil {
		j.Fields = make(map[string]any)
	}
	j.Fields[docfmt.Trigger] = mark
	if err := CheckNewJobs([]*job.Job{j}); err != nil {
		return nil, fmt.Errorf("its job is refused: %w", err)
	}
	return j, nil
}

// cursorBefore reports whether a comes before b in an index's order: by value (of one
// type, or by type as RethinkDB orders types: numbers before times), then by id.
func cursorBefore(a, b rdb.TriggerCursor) bool {
	if c := compareValues(a.V, b.V); c != 0 {
		return c < 0
	}
	return compareValues(a.ID, b.ID) < 0
}

// compareValues orders two index values or ids of the kinds a document holds: numbers,
// times and strings, each among its kind, numbers before times before strings; any
// other value last.
func compareValues(a, b any) int {
	rank := func(v any) int {
		switch v.(type) {
		case float64:
			return 0
		case time.Time:
			return 1
		case string:
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch a := a.(type) {
	case float64:
		return cmp.Compare(a, b.(float64))
	case time.Time:
		return a.Compare(b.(time.Time))
	case string:
		return strings.Compare(a, b.(string))
	}
	return 0
}
