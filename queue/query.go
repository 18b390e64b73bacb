package queue

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// table is the queue's table, named with its database: rethinkdb-go drops RunOpts.DB.
func (q *Queue) table() r.Term { return r.DB(q.cfg.db).Table(q.cfg.name) }

// opts returns the queue's run options for one call.
func (q *Queue) opts(ctx context.Context) r.RunOpts {
	o := q.cfg.runOpts
	o.Context = ctx
	return o
}

// readAll runs term and decodes every result into dst, a pointer to a slice. A context
// that has ended already sends nothing.
func (q *Queue) readAll(ctx context.Context, term r.Term, dst any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := term.Run(q.session, q.opts(ctx))
	if err != nil {
		return dberr.From(ctx, err)
	}
	return dberr.From(ctx, cur.All(dst))
}

// readOne runs term and decodes its single result into dst. A context that has ended
// already sends nothing.
func (q *Queue) readOne(ctx context.Context, term r.Term, dst any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, err := term.Run(q.session, q.opts(ctx))
	if err != nil {
		return dberr.From(ctx, err)
	}
	defer cur.Close()
	return dberr.From(ctx, cur.One(dst))
}

// writeResult is a write query's response, with the ids that a guarded write found missing
// or already present instead of writing (see whenAllExist and AddJob).
type writeResult struct {
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

// write runs a write query and turns a reported write error into an error.
func (q *Queue) write(ctx context.Context, term r.Term) (writeResult, error) {
	var res writeResult
	if err := q.readOne(ctx, term, &res); err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	return res, nil
}

// whenAllExist guards write so that it runs only when every id is in the table; otherwise
// nothing is written and the result lists the missing ids. One query does both, so a
// call with one unknown id changes no job.
func (q *Queue) whenAllExist(ids []string, write func(jobs r.Term) r.Term) r.Term {
	keys := anys(ids)
	return q.table().GetAll(keys...).Field("id").CoerceTo("array").Do(func(found r.Term) r.Term {
		return r.Branch(found.Count().Eq(len(ids)),
			write(q.table().GetAll(keys...)),
			map[string]any{"missing": r.Expr(ids).SetDifference(found)})
	})
}

// missingError reports ids that are not in the table.
func missingError(ids []string) error {
	return fmt.Errorf("%w: %v (nothing was changed)", job.ErrNotFound, ids)
}

func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// beginWithIDs checks ids (see parseIDs) and then begins a call (see begin).
func (q *Queue) beginWithIDs(ctx context.Context, ids []string) (checked []string, end func(), err error) {
	if checked, err = parseIDs(ids); err != nil {
		return nil, nil, err
	}
	if end, err = q.begin(ctx); err != nil {
		return nil, nil, err
	}
	return checked, end, nil
}

// parseIDs checks a list of job ids and drops repeats, keeping the first.
func parseIDs(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, ErrNoIDs
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !job.ValidID(id) {
			return nil, fmt.Errorf("%w (got %q)", job.ErrInvalidID, id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// appendLog appends entry to a log term under the queue's log limit.
func (q *Queue) appendLog(log r.Term, entry, trunc any) r.Term {
	return rdb.AppendLogTerm(log, entry, trunc, q.cfg.limitJobLogs)
}
