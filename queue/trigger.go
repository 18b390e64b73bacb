package queue

import (
	"context"
	"errors"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Trigger turns each version of the documents of a table of yours into a job: an order
// whose status changes, a document that is edited, a user who signs up. It is the durable
// changefeed RethinkDB never shipped: a runner follows the table's changefeed and, after
// any outage (its own crash, a cut, a server restart, a night with no runner), catches up
// from a cursor of its own by the table's index, so no change is missed.
//
// What it promises: every document that changes gets a job for its latest state, and no
// written version gets two jobs (a job's id is derived from the trigger, the document and
// its version). While a runner follows, every version it sees gets its job; versions
// overwritten while nobody followed are coalesced into the newest (the catch-up reads
// documents, not history). A document deleted while nobody follows gets no job: delete
// softly (a field that says so, written like any change), or make the deletion's job with
// Deleted, for the deletions a runner sees live.
//
// What it needs: Index, a secondary index of Table on Field (by default the index's own
// name: r.table("orders").indexCreate("updatedAt")) whose value every write raises: the
// server's r.now() on each write, or a counter that rises across the table. Times a client
// writes are accepted but must not run behind the server's by more than Rescan (the
// catch-up reads that far back; default 5 s); a counter must never repeat a value.
// Documents without Field are not in the index and never seen by a catch-up; a version
// whose Field is not a time or a number is skipped (logged, counted in TriggerStat).
//
// A trigger is declared with AddTrigger in every process that may run it (its Job func
// lives there); it is stored too (the table "<queue>_triggers"), so that rjq and the
// dashboard see it. It runs in one process at a time, a Queue Master that declared it,
// under a lease that another takes over within seconds after its process dies.
type Trigger struct {
	// Name is unique in the queue; the trigger's cursor and lease are kept under it.
	Name string
	// DB is the watched table's database ("": the queue's).
	DB string
	// Table is the watched table.
	Table string
	// Index is a secondary index of Table on a time or a number that every write raises.
	Index string
	// Field is the field Index holds ("": the index's name, as for an index made with
	// indexCreate("field")).
	Field string
	// Rescan is how far back, in the index's times, a catch-up reads behind the cursor, for
	// writes whose times land late (clocks of application servers that differ); zero:
	// 5 seconds. Unused for an index of numbers.
	Rescan time.Duration
	// Filter, when set, keeps the versions it returns true for; the others make no job
	// (a Go func: it runs in the runner, on the document as the driver decodes it).
	Filter func(doc map[string]any) bool
	// Job makes the job for a document's state (the document as the driver decodes it,
	// its "id" included); nil, nil makes none. The library sets the job's id from
	// (trigger, document id, index value), unless the job has a unique key
	// (job.SetUniqueKey), whose rules then apply. A Job func that fails or panics, or a
	// job AddJob refuses, skips the version: logged with the document's id and counted.
	Job func(ctx context.Context, doc map[string]any) (*job.Job, error)
	// Deleted, when set, makes the job of a deletion the runner sees on the changefeed,
	// from the document's last version (nil, nil: none). A deletion made while no runner
	// follows is not seen: the catch-up reads documents, and a deleted one is gone.
	Deleted func(ctx context.Context, last map[string]any) (*job.Job, error)
}

// TriggerStat is what Triggers reports of one trigger.
type TriggerStat struct {
	Name, DB, Table, Index, Field string
	Rescan                        time.Duration
	// Cursor is the index value every version at or below has its job (nil: none yet),
	// and CursorID the id of the last document of that value done.
	Cursor, CursorID any
	// Lag is how far behind the trigger is: the age of the first version past its cursor,
	// for an index of times (for one of numbers, what its runner last recorded).
	Lag time.Duration
	// Runner is the queue id of the process that runs it (empty when none holds its
	// lease), on RunnerHost, pid RunnerPID, since RunnerSince.
	Runner, RunnerHost string
	RunnerPID          int
	RunnerSince        time.Time
	// Jobs counts the jobs it made; Skipped the versions it skipped, and LastSkip says why
	// the last was.
	Jobs, Skipped int64
	LastSkip      string
	// Declared is set for a trigger this process declared.
	Declared bool
}

// ErrInvalidTrigger is wrapped by the error of AddTrigger given a trigger without a name,
// a table, an index or a Job func, or with a negative Rescan; it wraps job.ErrInvalid.
var ErrInvalidTrigger = invalid("queue: invalid trigger")

// ErrNoTriggerSource is wrapped by the error of AddTrigger when the watched table or its
// index does not exist.
var ErrNoTriggerSource = errors.New("queue: no such table or index to watch")

// AddTrigger declares t in this process and stores it, in place of a trigger of the same
// name (its cursor kept). When this queue is a Queue Master, it runs t while it holds its
// lease (one runner across every process). It checks that the table and the index exist.
func (q *Queue) AddTrigger(ctx context.Context, t Trigger) error {
	return publicErr(q.e.AddTrigger(ctx, engine.Trigger{Name: t.Name, DB: t.DB, Table: t.Table, Index: t.Index,
		Field: t.Field, Rescan: t.Rescan, Filter: t.Filter, Job: t.Job, Deleted: t.Deleted}))
}

// RemoveTrigger stops the trigger name here and removes it with its cursor: its runner in
// another process stops within seconds. It returns an error wrapping job.ErrNotFound when
// there is none.
func (q *Queue) RemoveTrigger(ctx context.Context, name string) error {
	return publicErr(q.e.RemoveTrigger(ctx, name))
}

// Triggers returns every trigger of the queue, declared here or elsewhere, by name. It
// reads one entry of each watched table's index for the lag.
func (q *Queue) Triggers(ctx context.Context) ([]TriggerStat, error) {
	stats, err := q.e.Triggers(ctx)
	if err != nil {
		return nil, publicErr(err)
	}
	now := time.Now()
	out := make([]TriggerStat, len(stats))
	for i, s := range stats {
		out[i] = TriggerStat{Name: s.Name, DB: s.DB, Table: s.Table, Index: s.Index, Field: s.Field,
			Rescan: time.Duration(s.Rescan * float64(time.Millisecond)), Lag: s.Lag,
			Jobs: s.Jobs, Skipped: s.Skipped, LastSkip: s.LastSkip, Declared: s.Declared}
		if c := s.Cursor; c != nil {
			out[i].Cursor, out[i].CursorID = c.V, c.ID
		}
		if run := s.Runner; run != nil && run.Until.After(now) {
			out[i].Runner, out[i].RunnerHost, out[i].RunnerPID, out[i].RunnerSince = run.Queue, run.Host, run.PID, run.Since
		}
	}
	return out, nil
}
