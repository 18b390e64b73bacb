// Package rdb is the library's storage layer: the queries it sends to RethinkDB, the job
// document codec, the log-entry format, the index definitions, and the retry and lease
// policy. Packages queue and master decide what to do; this package says how it is stored
// and fetched, in the Node.js library's database format. Two kinds of query live in the
// packages the layout gives them: creating the database, tables and indexes (dbinit) and
// following the table's changefeed (changefeed); both read index names from here.
//
// A Table is one queue's table and the identity its writes are stamped with. Its methods
// build and run the queries; the pure parts (codec, log entries, policy) are plain
// functions tested without a server.
package rdb

import (
	"context"
	"errors"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
)

// Table is one queue's table and how to query it.
type Table struct {
	Session r.QueryExecutor
	DB      string
	Name    string
	// RunOpts are the queue's query run options; Context is set per query.
	RunOpts r.RunOpts
	// QueueID is stamped on what the queue writes.
	QueueID string
	// LimitJobLogs is the queue's log limit (below 1: none).
	LimitJobLogs int
}

// Term is the table, named with its database: rethinkdb-go drops RunOpts.DB.
func (t *Table) Term() r.Term { return r.DB(t.DB).Table(t.Name) }

// Side is the side table of the queue with the given suffix ("_workers", "_schedules"),
// which the Node.js library never reads.
func (t *Table) Side(suffix string) r.Term { return r.DB(t.DB).Table(t.Name + suffix) }

// opts returns the run options for one call.
func (t *Table) opts(ctx context.Context) r.RunOpts {
	o := t.RunOpts
	o.Context = ctx
	return o
}

// writeOpts are the run options of a write: the queue's, without their read mode. A
// write runs on the shard's primary, which applies each document's change, guard
// included, to its latest version whatever the read mode says; "majority" (the default
// of Options.QueryRunOptions, as in the original) makes the server consult every replica
// before the write as well. Measured on RethinkDB 2.4.4, one node: a quarter of the server
// CPU of a claim or an outcome write of one job, and of throughput at concurrency 1.
func (t *Table) writeOpts(ctx context.Context) r.RunOpts {
	o := t.opts(ctx)
	o.ReadMode = nil // an empty string would be sent, and refused
	return o
}

// ReadAll runs term and decodes every result into dst, a pointer to a slice. A context
// that has ended already sends nothing.
func (t *Table) ReadAll(ctx context.Context, term r.Term, dst any) error {
	return t.runAll(ctx, term, t.opts, dst)
}

// ReadOne runs term and decodes its single result into dst. A context that has ended
// already sends nothing.
func (t *Table) ReadOne(ctx context.Context, term r.Term, dst any) error {
	return t.runOne(ctx, term, t.opts, dst)
}

// WriteOne runs the write term, with the run options of a write (see writeOpts), and
// decodes its single result into dst.
func (t *Table) WriteOne(ctx context.Context, term r.Term, dst any) error {
	return t.runOne(ctx, term, t.writeOpts, dst)
}

// writeAll runs the write term, with the run options of a write, and decodes every
// result into dst.
func (t *Table) writeAll(ctx context.Context, term r.Term, dst any) error {
	return t.runAll(ctx, term, t.writeOpts, dst)
}

func (t *Table) runAll(ctx context.Context, term r.Term, opts func(context.Context) r.RunOpts, dst any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := term.Run(t.Session, opts(ctx))
	if err != nil {
		return t.failed(ctx, err)
	}
	return t.failed(ctx, cur.All(dst))
}

func (t *Table) runOne(ctx context.Context, term r.Term, opts func(context.Context) r.RunOpts, dst any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := term.Run(t.Session, opts(ctx))
	if err != nil {
		return t.failed(ctx, err)
	}
	defer cur.Close()
	return t.failed(ctx, cur.One(dst))
}

// failed is the error of a query, as dberr reads it. A query that ran out of its
// context's time may have met a connection gone silent: a session that can replace its
// connections (a Conn) is told.
func (t *Table) failed(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if s, ok := t.Session.(interface{ Stalled() }); ok {
			s.Stalled()
		}
	}
	return dberr.From(ctx, err)
}

// FollowJob is the changefeed of the job id, starting with its current value (none for a
// job that is not in the table).
func (t *Table) FollowJob(ctx context.Context, id string) (*r.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cur, err := t.Term().Get(id).Changes(r.ChangesOpts{IncludeInitial: true}).Run(t.Session, t.opts(ctx))
	return cur, dberr.From(ctx, err)
}

// WriteResult is a write query's response, with the ids that a guarded write found
// missing or already present instead of writing (see whenAllExist and Insert).
type WriteResult struct {
	Inserted   int                `rethinkdb:"inserted"`
	Replaced   int                `rethinkdb:"replaced"`
	Unchanged  int                `rethinkdb:"unchanged"`
	Skipped    int                `rethinkdb:"skipped"`
	Deleted    int                `rethinkdb:"deleted"`
	Errors     int                `rethinkdb:"errors"`
	FirstError string             `rethinkdb:"first_error"`
	Changes    []r.ChangeResponse `rethinkdb:"changes"`
	Missing    []string           `rethinkdb:"missing"`
	Exists     []string           `rethinkdb:"exists"`
}

// Write runs a write query and turns a reported write error into an error.
func (t *Table) Write(ctx context.Context, term r.Term) (WriteResult, error) {
	var res WriteResult
	if err := t.WriteOne(ctx, term, &res); err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	return res, nil
}

// AppendLog appends entry to a log term under the table's log limit.
func (t *Table) AppendLog(log r.Term, entry, trunc any) r.Term {
	return AppendLogTerm(log, entry, trunc, t.LimitJobLogs)
}

// Anys converts a slice for the driver's variadic and array arguments (ids for GetAll,
// terms for one query of several writes).
func Anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
