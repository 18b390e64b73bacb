package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// MessageOrphan is the log message of a job the review fails, the original's.
const MessageOrphan = rdb.MessageOrphan

// Retention says which finished jobs the review removes.
type Retention struct {
	// Keep is true when finished jobs are never removed.
	Keep bool
	// Immediately is true when every finished job is removed.
	Immediately bool
	// Period is how long finished jobs are kept otherwise.
	Period time.Duration
}

// Target is the table to review and who reviews it.
type Target struct {
	Session r.QueryExecutor
	DB      string
	Table   string
	// RunOpts are the queue's query run options; Context is set per query.
	RunOpts r.RunOpts
	// QueueID is the reviewing queue's id, written into what it changes.
	QueueID      string
	LimitJobLogs int
	Retention    Retention
	// TallyFrom is the table size, by the server's estimate, from which the tally of
	// finished jobs is kept: below it AdvanceTally starts none and creates nothing, as
	// Summary counts a small table exactly. Zero tallies every table.
	TallyFrom int
	// Log receives the progress of long removals (nil: none).
	Log *slog.Logger
}

// table is t's table in the storage layer.
func (t Target) table() *rdb.Table {
	return &rdb.Table{Session: t.Session, DB: t.DB, Name: t.Table, RunOpts: t.RunOpts,
		QueueID: t.QueueID, LimitJobLogs: t.LimitJobLogs}
}

// assertStats creates the table's stats side table if it is missing.
func (t Target) assertStats(ctx context.Context) error {
	err := dbinit.Assert(ctx, dbinit.Target{Session: t.Session, DB: t.DB, Table: t.Table + rdb.StatsSuffix, RunOpts: t.RunOpts,
		NoIndexes: true, Beside: t.Table})
	if err != nil {
		return fmt.Errorf("master: create the table %s: %w", t.Table+rdb.StatsSuffix, err)
	}
	return nil
}

func (t Target) logger() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

// Result is what one review did.
type Result struct {
	// Reviewed is the number of orphaned jobs failed or terminated.
	Reviewed int
	// Removed is the number of finished jobs removed.
	Removed int
}

// Review runs the review once: orphaned jobs, then finished jobs (in slices, one master
// at a time: see retention.go), then the State Document. A step that fails does not keep
// the others from running; the error joins every step's.
func Review(ctx context.Context, t Target) (Result, error) {
	tbl := t.table()
	var res Result
	var orphanErr, removeErr, stateErr error
	if res.Reviewed, orphanErr = tbl.FailOrphans(ctx); orphanErr != nil {
		orphanErr = fmt.Errorf("master: fail orphaned jobs: %w", orphanErr)
	}
	if !t.Retention.Keep {
		period := t.Retention.Period
		if t.Retention.Immediately {
			period = 0
		}
		res.Removed, removeErr = removeFinished(ctx, t, tbl, period)
		if removeErr != nil {
			removeErr = fmt.Errorf("master: remove finished jobs: %w", removeErr)
		}
	}
	if err := tbl.WriteState(ctx, "reviewed"); err != nil {
		stateErr = fmt.Errorf("master: write the State Document: %w", err)
	}
	return res, errors.Join(orphanErr, removeErr, stateErr)
}
