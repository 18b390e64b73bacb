package rjqtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// WithParentResult runs a workflow's child (a job with parents, job.SetDependsOn) as if
// its parent id had completed with result: in the handler, j.ParentResult(id, &v) decodes
// it. The result is stored as a queue stores a parent's: by its json names (a struct
// reads back as a map with float64 numbers until ParentResult decodes it), and one that
// cannot be stored (a func, a NaN) reaches the child as job.ErrResultNotStored. A
// parent given no result completed with none, as one whose handler returned nil:
// ParentResult decodes nothing and returns nil. Run refuses an id that is not one of the
// job's parents; given twice for one id, the last result counts.
func WithParentResult(id string, result any) Option {
	return func(o *options) {
		if o.parents == nil {
			o.parents = make(map[string]any)
		}
		o.parents[id] = result
	}
}

// checkParentResults refuses results given (WithParentResult) for ids that are not
// parents of j: a test that gives one means another job.
func checkParentResults(j *job.Job, given map[string]any) error {
	parents := j.DependsOn()
	var strays []string
	for id := range given {
		if !slices.Contains(parents, id) {
			strays = append(strays, errtext.Key(id))
		}
	}
	if len(strays) == 0 {
		return nil
	}
	slices.Sort(strays)
	has := "the job has no parents (job.SetDependsOn)"
	if len(parents) > 0 {
		shown := parents[:min(len(parents), 5)]
		has = "its parents are " + strings.Join(shown, ", ")
		if len(parents) > len(shown) {
			has += fmt.Sprintf(" and %d more", len(parents)-len(shown))
		}
	}
	return fmt.Errorf("%w: WithParentResult given %s: %w: %s", queue.ErrInvalidOption, strings.Join(strays, ", "), job.ErrNotParent, has)
}

// setParentResults gives in (the job to claim, in its stored form) what a queue's release
// gives a child: what ParentResult reads of each parent's completion entry, in the field
// the release writes. A child released now (just added) gets one for every parent, of a
// parent given no result as of one that returned nil; one released already (waiting or
// failed) keeps what it carries, but for the parents given.
func setParentResults(in *job.Job, given map[string]any, releasedNow bool) error {
	parents := in.DependsOn()
	if len(parents) == 0 || !releasedNow && len(given) == 0 {
		return nil
	}
	results := make(map[string]any, len(parents))
	if !releasedNow {
		kept, _ := in.Fields[docfmt.ParentResults].(map[string]any)
		maps.Copy(results, kept)
	}
	for _, id := range parents {
		if result, ok := given[id]; ok || releasedNow {
			results[id] = keptResult(id, result)
		}
	}
	stored, err := storedForm(results)
	if err != nil {
		return fmt.Errorf("parent results: %w", err)
	}
	in.Fields[docfmt.ParentResults] = stored
	return nil
}

// keptResult is what a child keeps of the completion entry of parent id whose handler
// returned result, as a queue writes that entry (a result that cannot be stored is left
// out, and the entry says why).
func keptResult(id string, result any) map[string]any {
	parent := &job.Job{ID: id, Status: job.Active, ProcessCount: 1}
	t := rdb.AfterSuccess(parent, now())
	entry, _ := rdb.CompletionEntry(parent, QueueID, result, t, time.Duration(0))
	return rdb.KeptResult(entry.Document())
}
