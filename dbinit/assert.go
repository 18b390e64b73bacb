package dbinit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// The five secondary indexes of a queue's table, by the names the Node.js library uses
// (their functions are the library's storage layer's).
const (
	IndexActiveDateEnable            = rdb.IndexActiveDateEnable
	IndexInactivePriorityDateCreated = rdb.IndexInactivePriorityDateCreated
	IndexFinishedDateFinished        = rdb.IndexFinishedDateFinished
	IndexName                        = rdb.IndexName
	IndexStatus                      = rdb.IndexStatus
)

// IndexClaim is this library's own index, beside the Node.js library's five: waiting and
// failed jobs by [-priority, -dateEnable, -dateCreated, id], read in descending order. It
// orders jobs as IndexInactivePriorityDateCreated does, with two differences that
// RethinkDB 2.4 makes matter:
//   - its keys never tie: RethinkDB reads every entry that ties on an index key before it
//     applies a limit, so claims through the original index slow down in proportion to the
//     jobs added in one millisecond (a batch insert, or jobs the Node.js library adds);
//   - it is read from its high end: claims delete entries at the end they read from, and
//     an ascending read through a stretch of deleted entries costs the server
//     milliseconds per thousand of them (measured on 2.4.4: 66 ms for the first 50
//     entries of an index whose first 8,000 had been claimed), where a descending read
//     costs 3 to 4 ms whether or not entries were deleted there.
//
// The Node.js library ignores an index it does not know. Earlier versions of this library
// created an ascending index, LegacyIndexClaim, which Assert no longer creates: drop it
// once no such worker runs (r.db(db).table(queue).indexDrop("rjqIndexClaim")).
const IndexClaim = rdb.IndexClaim

// LegacyIndexClaim is the ascending claim index of earlier versions (see IndexClaim).
const LegacyIndexClaim = rdb.LegacyIndexClaim

// Indexes lists the index names in the order they are created: the Node.js library's five,
// then IndexClaim. It is a copy: changing it changes nothing that Assert creates.
var Indexes = slices.Clone(rdb.Indexes)

// IndexDeadline is this library's index of the start deadlines of waiting and failed jobs
// (job.SetDeadline). Assert does not create it: a queue creates it when it first adds a
// job with a deadline, so that a table whose jobs have none never pays for it, and
// nothing waits for it (see queue.Queue.AddJob).
const IndexDeadline = rdb.IndexDeadline

// Target names the table to assert and how to reach it.
type Target struct {
	Session r.QueryExecutor
	DB      string
	Table   string
	// RunOpts are the queue's query run options; Context is set per query.
	RunOpts r.RunOpts
	// NoIndexes asserts the table without the job indexes: a side table of a queue (its
	// schedules, its workers), which holds no jobs.
	NoIndexes bool
	// Shards and Replicas configure the table when Assert creates it (zero: the server's
	// default, one of each). A table that exists keeps its configuration, whatever these
	// say: reconfiguring a table is an operator's decision (see rethinkdb's reconfigure).
	Shards, Replicas int
	// Beside names, for a side table, the queue's table beside it: with Replicas zero,
	// the side table is created with as many replicas as that table has, so that it
	// survives the loss of a server as the queue's table does.
	Beside string
}

// assertTimeout bounds how long Assert keeps retrying creation steps that a concurrent
// creator or a cluster that is still converging made fail, when ctx has no deadline.
const assertTimeout = time.Minute

// Assert creates whatever is missing of the database, the table and the indexes, and
// waits until the table and the indexes are ready. It is safe to run from many processes
// at once, against one server or a cluster:
//
//   - RethinkDB does not serialize dbCreate or tableCreate of one name, so creators racing
//     on a fresh server can make two databases or two tables of the same name, after which
//     every query naming them fails as "ambiguous". Assert looks for such twins in the
//     system tables db_config and table_config, and every creator agrees on the one to
//     keep, the lowest id. The others are renamed out of the way, what they hold is copied
//     into the keeper, and they are dropped.
//   - On a cluster, a database created through one server may not yet be visible through
//     another; creation steps that fail because of that are retried with jittered backoff.
func Assert(ctx context.Context, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, assertTimeout)
	defer cancel()
	t = t.withReplicasOfBeside(ctx)
	backoff := 20 * time.Millisecond
	for {
		err := assertOnce(ctx, t)
		if err == nil {
			var found bool
			if found, err = resolveTwins(ctx, t); err == nil && !found {
				return nil
			}
		} else if transient(err) {
			// A twin may be what made the name ambiguous.
			if _, terr := resolveTwins(ctx, t); terr != nil && !transient(terr) {
				return terr
			}
		}
		if err != nil && !transient(err) {
			return err
		}
		// Twins were merged, or a step met a racer's half-made state: do it all again on
		// what is there now.
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("dbinit: gave up creating %s.%s: %w", t.DB, t.Table, err)
		case <-time.After(backoff + rand.N(backoff)):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// assertOnce runs each creation step once.
func assertOnce(ctx context.Context, t Target) error {
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
		db.TableList().Contains(t.Table), map[string]any{"tables_created": 0},
		db.TableCreate(t.Table, t.createOpts()))); err != nil {
		return err
	}
	table := db.Table(t.Table)
	if err := run("wait for table "+t.Table, table.Wait()); err != nil {
		return err
	}
	if t.NoIndexes {
		return nil
	}
	var existing []string
	if err := readAll(ctx, t.Session, opts, table.IndexList(), &existing); err != nil {
		return fmt.Errorf("dbinit: list indexes of %s: %w", t.Table, err)
	}
	create := func(names []string) error {
		for _, name := range names {
			if slices.Contains(existing, name) {
				continue
			}
			create := table.IndexCreate(name)
			if fn := rdb.IndexFunc(name); fn != nil {
				create = table.IndexCreateFunc(name, fn)
			}
			if err := run("create index "+name, create); err != nil {
				return err
			}
		}
		return nil
	}
	if err := create(rdb.Indexes); err != nil {
		return err
	}
	// By name: an index of this library's that is built in the background (IndexDeadline,
	// on a big table) holds nobody up.
	return run("wait for indexes of "+t.Table, table.IndexWait(anys(rdb.Indexes)...))
}

// createOpts are the options of the table's creation: none but those given.
func (t Target) createOpts() r.TableCreateOpts {
	var o r.TableCreateOpts
	if t.Shards > 0 {
		o.Shards = t.Shards
	}
	if t.Replicas > 0 {
		o.Replicas = t.Replicas
	}
	return o
}

// configEntry is a row of rethinkdb.db_config or rethinkdb.table_config.
type configEntry struct {
	ID   string `rethinkdb:"id"`
	Name string `rethinkdb:"name"`
	DB   string `rethinkdb:"db"`
}

// twinSuffix marks a twin renamed out of the way; the rest of its name is its id.
const twinSuffix = "_rjqtwin_"

// resolveTwins merges and drops duplicate databases and tables of the target's names,
// keeping the one with the lowest id, and finishes the merges of twins that a racer
// renamed out of the way and did not drop (it failed, or the rename was not yet visible
// to it). It reports whether it found any. A server without the system tables (reqlite)
// has none to find.
func resolveTwins(ctx context.Context, t Target) (bool, error) {
	opts := t.RunOpts
	opts.Context = ctx
	opts.ReadMode = "majority"
	sys := r.DB("rethinkdb")
	var dbs []configEntry
	if err := readAll(ctx, t.Session, opts, sys.Table("db_config").Filter(namedOrTwin(t.DB)), &dbs); err != nil {
		return false, fmt.Errorf("dbinit: look for twins of database %s: %w", t.DB, err)
	}
	keep, twins := splitTwins(dbs, t.DB)
	for i, twin := range twins { // all renamed first, as tables below
		if twin.Name == t.DB {
			renamed := t.DB + twinSuffix + strings.ReplaceAll(twin.ID, "-", "")
			if err := runWrite(opts, t.Session, sys.Table("db_config").Get(twin.ID).Update(map[string]any{"name": renamed})); err != nil {
				return true, fmt.Errorf("dbinit: rename twin database %s: %w", twin.ID, err)
			}
			twins[i].Name = renamed
		}
	}
	for _, twin := range twins {
		if err := absorbDB(ctx, t, opts, twin.Name); err != nil {
			return true, err
		}
	}
	found := len(twins) > 0
	if keep == nil {
		return found, nil
	}
	var tables []configEntry
	// The db field of table_config names the database; after the step above it is unique.
	if err := readAll(ctx, t.Session, opts, sys.Table("table_config").Filter(func(row r.Term) r.Term {
		return row.Field("db").Eq(t.DB).And(namedOrTwin(t.Table)(row))
	}), &tables); err != nil {
		return found, fmt.Errorf("dbinit: look for twins of table %s: %w", t.Table, err)
	}
	_, twins = splitTwins(tables, t.Table)
	// Every twin is renamed before any is merged: until then, the kept table's name is
	// ambiguous, and a copy into it fails.
	for i, twin := range twins {
		if twin.Name == t.Table {
			renamed, err := renameTable(t, opts, twin)
			if err != nil {
				return true, err
			}
			twins[i].Name = renamed
		}
	}
	for _, twin := range twins {
		if err := absorbTable(t, opts, t.DB, twin.Name, t.Table); err != nil {
			return true, err
		}
	}
	return found || len(twins) > 0, nil
}

// namedOrTwin selects the config entries named name, and the twins of name renamed out
// of the way.
func namedOrTwin(name string) func(row r.Term) r.Term {
	return func(row r.Term) r.Term {
		return row.Field("name").Eq(name).Or(row.Field("name").Match("^" + regexp.QuoteMeta(name+twinSuffix)))
	}
}

// splitTwins returns the entry named name to keep (the lowest id; nil when there is
// none), and every other: the twins of the same name and those already renamed.
func splitTwins(entries []configEntry, name string) (keep *configEntry, twins []configEntry) {
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.ID, b.ID) })
	for i, e := range entries {
		if e.Name == name && keep == nil {
			keep = &entries[i]
			continue
		}
		twins = append(twins, e)
	}
	return keep, twins
}

// absorbDB merges each table of a renamed twin database into the kept database's table
// of the same name, and drops it.
func absorbDB(ctx context.Context, t Target, opts r.RunOpts, renamed string) error {
	var tables []configEntry
	if err := readAll(ctx, t.Session, opts, r.DB("rethinkdb").Table("table_config").Filter(map[string]any{"db": renamed}), &tables); err != nil {
		return fmt.Errorf("dbinit: list tables of twin database %s: %w", renamed, err)
	}
	for _, tb := range tables {
		// The kept database may not have this table yet: create it (a racer may too).
		create := r.Branch(r.DB(t.DB).TableList().Contains(tb.Name), nil, r.DB(t.DB).TableCreate(tb.Name))
		if err := runWrite(opts, t.Session, create); err != nil && !alreadyExists(err) {
			return fmt.Errorf("dbinit: create table %s for a twin's jobs: %w", tb.Name, err)
		}
		if err := runWrite(opts, t.Session, r.DB(t.DB).Table(tb.Name).Wait()); err != nil {
			return fmt.Errorf("dbinit: wait for table %s: %w", tb.Name, err)
		}
		if err := copyInto(opts, t.Session, r.DB(renamed).Table(tb.Name), r.DB(t.DB).Table(tb.Name)); err != nil {
			return err
		}
	}
	if err := runWrite(opts, t.Session, r.DBDrop(renamed)); err != nil && !doesNotExist(err) {
		return fmt.Errorf("dbinit: drop twin database %s: %w", renamed, err)
	}
	return nil
}

// renameTable renames a twin table out of the way and returns its new name.
func renameTable(t Target, opts r.RunOpts, twin configEntry) (string, error) {
	renamed := twin.Name + twinSuffix + strings.ReplaceAll(twin.ID, "-", "")
	if err := runWrite(opts, t.Session, r.DB("rethinkdb").Table("table_config").Get(twin.ID).Update(map[string]any{"name": renamed})); err != nil {
		return "", fmt.Errorf("dbinit: rename twin table %s: %w", twin.ID, err)
	}
	return renamed, nil
}

// absorbTable copies what the renamed twin holds into the kept table, and drops it. A
// step that finds the twin missing fails as transient: the rename may not be visible
// yet, or a racer dropped it; the next look at table_config tells which.
func absorbTable(t Target, opts r.RunOpts, db, renamed, keep string) error {
	if err := runWrite(opts, t.Session, r.DB(db).Table(renamed).Wait()); err != nil {
		return fmt.Errorf("dbinit: wait for twin table %s: %w", renamed, err)
	}
	if err := copyInto(opts, t.Session, r.DB(db).Table(renamed), r.DB(db).Table(keep)); err != nil {
		return err
	}
	if err := runWrite(opts, t.Session, r.DB(db).TableDrop(renamed)); err != nil && !doesNotExist(err) {
		return fmt.Errorf("dbinit: drop twin table %s: %w", renamed, err)
	}
	return nil
}

// copyInto inserts every document of from into to, keeping what to holds already. A twin
// lives for moments, so it holds a handful of documents at most.
func copyInto(opts r.RunOpts, s r.QueryExecutor, from, to r.Term) error {
	err := runWrite(opts, s, to.Insert(from.CoerceTo("array"), r.InsertOpts{Conflict: func(_, old, _ r.Term) any { return old }}))
	if err != nil {
		return fmt.Errorf("dbinit: copy a twin's documents: %w", err)
	}
	return nil
}

func runWrite(opts r.RunOpts, s r.QueryExecutor, term r.Term) error {
	cur, err := term.Run(s, opts)
	if err == nil {
		err = cur.Close()
	}
	return err
}

func readAll(ctx context.Context, s r.QueryExecutor, opts r.RunOpts, term r.Term, dst any) error {
	opts.Context = ctx
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

// doesNotExist recognises the error of a step on something a racer dropped, or that a
// cluster does not show through this server yet.
func doesNotExist(err error) bool {
	return strings.Contains(err.Error(), "does not exist")
}

// transient reports errors that another try can get past: a twin made a name ambiguous,
// a racer dropped or renamed what this step used, or the cluster is still converging.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"ambiguous", "does not exist", "not available", "unavailable", "lost contact", "none of the servers"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func anys(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}
