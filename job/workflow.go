package job

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// MaxDependsOn is the most parents a job may have (SetDependsOn).
const MaxDependsOn = 1000

// ErrInvalidDependsOn is wrapped by the errors of SetDependsOn and of AddJob for parents
// that cannot be: none, an empty id, an id that is not a job id (that error also wraps
// ErrInvalidID), more than MaxDependsOn, the job itself, a job already added, a cycle, or
// a parent that is in neither the call nor the queue's table, or that will never
// complete. It wraps ErrInvalid.
var ErrInvalidDependsOn = fmt.Errorf("%w parents", ErrInvalid)

// ErrNotParent is returned by ParentResult for an id that is not one of the job's
// parents.
var ErrNotParent = errors.New("job: not a parent of this job")

// SetDependsOn makes the job wait for other jobs of its queue, its parents: it is added
// Blocked, no worker claims it, and it becomes waiting once every parent has completed (a
// "released" event). A parent may be added in the same AddJob call (in any order within
// it) or be in the table already; one that has completed counts as done. When a parent is
// terminated, cancelled or removed before it completes, the job is cancelled, and so are
// the jobs that wait for it in turn, level by level: each with a reason (its cancelled
// event's and its last log entry's) naming that parent and how it ended, "parent <id>
// was terminated" for its children, "ancestor <id> ("<name>") was terminated" further
// down. A parent that fails and will retry keeps the job blocked until it completes.
//
// In the job's handler, ParentResult decodes a parent's result. The parents are stored
// in the extra field "rjqDependsOn". Giving ids again adds them; an id given twice counts
// once.
func (j *Job) SetDependsOn(ids ...string) *Job {
	switch {
	case j.Status != Created && j.Status != "":
		return j.fail(fmt.Errorf("%w: job %s was added already (%s): set its parents before AddJob", ErrInvalidDependsOn, j.ID, j.Status))
	case len(ids) == 0:
		return j.fail(fmt.Errorf("%w: SetDependsOn needs at least one id", ErrInvalidDependsOn))
	}
	parents := j.DependsOn()
	for _, id := range ids {
		if err := j.checkParent(id); err != nil {
			return j.fail(err)
		}
		if !slices.Contains(parents, id) {
			parents = append(parents, id)
		}
	}
	if err := checkParentCount(len(parents)); err != nil {
		return j.fail(err)
	}
	stored := make([]any, len(parents))
	for i, id := range parents {
		stored[i] = id
	}
	j.setField(docfmt.DependsOn, stored)
	return j
}

// checkParent reports an id that cannot be a parent of j: empty, not a job id, or j's own.
func (j *Job) checkParent(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: an empty id", ErrInvalidDependsOn)
	case !ValidID(id):
		return fmt.Errorf("%w: %s is not a job id (%w)", ErrInvalidDependsOn, errtext.Key(id), ErrInvalidID)
	case id == j.ID:
		return fmt.Errorf("%w: job %s cannot depend on itself", ErrInvalidDependsOn, j.ID)
	}
	return nil
}

// checkParentCount reports a number of parents that is not 1 to MaxDependsOn.
func checkParentCount(n int) error {
	switch {
	case n == 0:
		return fmt.Errorf("%w: no id", ErrInvalidDependsOn)
	case n > MaxDependsOn:
		return fmt.Errorf("%w: %d parents, more than MaxDependsOn (%d)", ErrInvalidDependsOn, n, MaxDependsOn)
	}
	return nil
}

// checkDependsOn reports parents in Fields that SetDependsOn would have refused (written
// by hand, or an id that SetUniqueKey made the job's own since): a field that is not a
// list of 1 to MaxDependsOn job ids, each once, none the job's.
func (j *Job) checkDependsOn() error {
	v, set := j.Fields[docfmt.DependsOn]
	if !set {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%w: the field %q holds %T, not a list of job ids: set parents with SetDependsOn", ErrInvalidDependsOn, docfmt.DependsOn, v)
	}
	if err := checkParentCount(len(list)); err != nil {
		return err
	}
	seen := make(map[string]bool, len(list))
	for _, p := range list {
		id, ok := p.(string)
		if !ok {
			return fmt.Errorf("%w: the field %q holds %T %v, not a job id (%w)", ErrInvalidDependsOn, docfmt.DependsOn, p, p, ErrInvalidID)
		}
		if err := j.checkParent(id); err != nil {
			return err
		}
		if seen[id] {
			return fmt.Errorf("%w: parent %s is given twice", ErrInvalidDependsOn, id)
		}
		seen[id] = true
	}
	return nil
}

// DependsOn returns the ids of the job's parents (SetDependsOn), nil for a job without.
func (j *Job) DependsOn() []string {
	list, _ := j.Fields[docfmt.DependsOn].([]any)
	var out []string
	for _, v := range list {
		if id, ok := v.(string); ok {
			out = append(out, id)
		}
	}
	return out
}

// ParentResult decodes the result of parent id (one of DependsOn) into v, as Result does
// for the job's own: the result of the parent's completed run, which the job carries
// from its release on (so it stays readable after the parent is removed). It returns
// ErrNotParent for an id that is not a parent, and ErrNoResult before the job was
// released.
func (j *Job) ParentResult(id string, v any) error {
	if !slices.Contains(j.DependsOn(), id) {
		return fmt.Errorf("job %s: %w: %s", j.ID, ErrNotParent, id)
	}
	results, _ := j.Fields[docfmt.ParentResults].(map[string]any)
	entry, _ := results[id].(map[string]any)
	parent := &Job{ID: id, store: j.store}
	if len(entry) > 0 {
		e, err := LogEntryFromDocument(entry)
		if err != nil {
			return fmt.Errorf("job %s: result of parent %s: %w", j.ID, id, err)
		}
		if e.Message == "" {
			e.Message = MessageCompleted // kept without its message (see rjqParentResults)
		}
		parent.Log = []LogEntry{e}
	}
	return parent.Result(v)
}
