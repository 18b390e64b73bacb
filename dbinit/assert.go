package dbinit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// The five secondary indexes of a queue's table, by the names the Node.js library uses.
const (
	IndexActiveDateEnable            = "indexActiveDateEnable"
	IndexInactivePriorityDateCreated = "indexInactivePriorityDateCreated"
	IndexFinishedDateFinished        = "indexFinishedDateFinished"
	IndexName                        = "name"
	IndexStatus                      = "status"
)

// Indexes lists the five index names in the order they are created.
var Indexes = []string{
	IndexActiveDateEnable,
	IndexInactivePriorityDateCreated,
	IndexFinishedDateFinished,
	IndexName,
	IndexStatus,
}

// indexFunc returns the function of a named index; nil for a simple field index. The
// functions are the Node.js library's, term for term: an index of the same name must never
// hold other keys, or the two libraries would read each other's tables wrongly.
func indexFunc(name string) func(row r.Term) any {
	switch name {
	case IndexActiveDateEnable:
		return func(row r.Term) any {
			return r.Branch(row.Field("status").Eq("active"), row.Field("dateEnable"), nil)
		}
	case IndexInactivePriorityDateCreated:
		return func(row r.Term) any {
			key := []any{row.Field("priority"), row.Field("dateEnable"), row.Field("dateCreated")}
			return r.Branch(
				row.Field("status").Eq("waiting"), key,
				row.Field("status").Eq("failed"), key,
				nil)
		}
	case IndexFinishedDateFinished:
		return func(row r.Term) any {
			return r.Branch(
				row.Field("status").Eq("completed"), row.Field("dateFinished"),
				row.Field("status").Eq("cancelled"), row.Field("dateFinished"),
				row.Field("status").Eq("terminated"), row.Field("dateFinished"),
				nil)
		}
	}
	return nil
}

// Target names the table to assert and how to reach it.
type Target struct {
	Session r.QueryExecutor
	DB      string
	Table   string
	// RunOpts are the queue's query run options; Context is set per query.
	RunOpts r.RunOpts
}

// Assert creates whatever is missing of the database, the table and the five indexes, and
// waits until the table and the indexes are ready. It is safe to run from many processes
// at once.
func Assert(ctx context.Context, t Target) error {
	opts := t.RunOpts
	opts.Context = ctx
	run := func(what string, term r.Term) error {
		cur, err := term.Run(t.Session, opts)
		if err == nil {
			err = cur.Close()
		}
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("dbinit: %s: %w", what, err)
		}
		return nil
	}
	if err := run("create database "+t.DB, r.Branch(
		r.DBList().Contains(t.DB), map[string]any{"dbs_created": 0}, r.DBCreate(t.DB))); err != nil {
		return err
	}
	db := r.DB(t.DB)
	if err := run("create table "+t.Table, r.Branch(
		db.TableList().Contains(t.Table), map[string]any{"tables_created": 0}, db.TableCreate(t.Table))); err != nil {
		return err
	}
	table := db.Table(t.Table)
	if err := run("wait for table "+t.Table, table.Wait()); err != nil {
		return err
	}
	var existing []string
	if err := readAll(ctx, t.Session, opts, table.IndexList(), &existing); err != nil {
		return fmt.Errorf("dbinit: list indexes of %s: %w", t.Table, err)
	}
	for _, name := range Indexes {
		if slices.Contains(existing, name) {
			continue
		}
		create := table.IndexCreate(name)
		if fn := indexFunc(name); fn != nil {
			create = table.IndexCreateFunc(name, fn)
		}
		if err := run("create index "+name, create); err != nil {
			return err
		}
	}
	return run("wait for indexes of "+t.Table, table.IndexWait())
}

func readAll(ctx context.Context, s r.QueryExecutor, opts r.RunOpts, term r.Term, dst any) error {
	cur, err := term.Run(s, opts)
	if err != nil {
		return err
	}
	return cur.All(dst)
}

// alreadyExists recognises the error of a create that lost a race to another queue.
func alreadyExists(err error) bool {
	return strings.Contains(err.Error(), "already exists")
}
