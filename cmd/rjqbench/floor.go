package main

import (
	"context"
	"fmt"
	"os"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The floor is the smallest loop that does the writes any queue of this database format
// must do per job, on the same server, documents and indexes as the library: it tells
// what the server allows, so that the library's figures mean something beside it.
//
// Each round reads k candidate ids in processing order from the library's claim index
// (readMode outdated; that order is the index's descending one, see dbinit.IndexClaim),
// claims them with one guarded update that returns the changes (status active,
// dateStarted, processCount + 1, one log entry), and finishes the ones it won with one
// guarded update (status completed, dateFinished, progress 100, one log entry). Every
// write is checked to have written what it claims: a guard that matches nothing makes a
// write look cheap.

// floorQueueID stamps the floor's log entries: a queue id of the length every queue of
// this format writes into each entry (hostname:db:queue:pid:uuid), so that the floor's
// documents grow as the library's do.
var floorQueueID = "floorhost:rjqbench_000000:rjqJobList:12345:" + "00000000-0000-4000-8000-000000000000"

// floorProcess runs the floor loop with batch k over n jobs that the library added.
func floorProcess(ctx context.Context, addr string, k, n int, cpu cpuMeter) (result, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return result{}, err
	}
	defer drop()
	if err := addWithLibrary(ctx, addr, db, n); err != nil {
		return result{}, err
	}
	return floorLoop(ctx, s, db, k, n, cpu)
}

// floorLoop runs the floor loop with batch k over n waiting jobs of db's default queue.
func floorLoop(ctx context.Context, s *r.Session, db string, k, n int, cpu cpuMeter) (result, error) {
	f := newFloorRounds(db, k, nil, 0)
	cpuUsed, selfUsed := cpu.span(), self.span()
	start := time.Now()
	for done := 0; done < n; {
		won, err := f.round(ctx, s)
		if err != nil {
			return result{}, err
		}
		if won == 0 {
			return result{}, fmt.Errorf("floor: %d of %d jobs done and none left to claim", done, n)
		}
		done += won
	}
	elapsed := time.Since(start)
	if kindsWanted {
		fmt.Fprintf(os.Stderr, "floor k=%d: this process's CPU per job %s\n", k, perJob(selfUsed(), n))
	}
	return result{jobsPerSec: float64(n) / elapsed.Seconds(), cpu: cpuUsed(), jobs: n}, nil
}

// floorRounds makes the rounds of the floor loop on one table.
type floorRounds struct {
	table, read           r.Term
	k                     int
	claimEntry, doneEntry any
	// lastChars, when not nil, keeps the loop to the jobs whose ids end with one of
	// them: the part of the jobs one of several floor processes takes, so that they never
	// contend (-procs).
	lastChars []any
	// window, when not 0, bounds the part read as a worker's must be bounded: it filters
	// only the first window entries of the index to the part, as many as a worker's part
	// read does (rdb.PartWindow). A worker cannot read its part
	// without a bound: when its part is empty, or holds only jobs it must pass over, an
	// unbounded read scans the rest of the index, the other parts' jobs and every delayed
	// job, on every read. A windowed read that finds none of the part's jobs is followed
	// by an unbounded one, as a worker's short read is by a read of the whole head.
	window int
}

func newFloorRounds(db string, k int, lastChars []any, window int) *floorRounds {
	var none job.Job
	return &floorRounds{
		table:      r.DB(db).Table(queue.DefaultName),
		read:       r.DB(db).Table(queue.DefaultName, r.TableOpts{ReadMode: "outdated"}),
		k:          k,
		claimEntry: rdb.NewLog(&none, floorQueueID, nil, job.MessageActive, job.Information, job.Active).WithoutData().Document(),
		doneEntry:  rdb.NewLog(&none, floorQueueID, nil, job.MessageCompleted, job.Information, job.Completed).WithDuration(time.Millisecond).Document(),
		lastChars:  lastChars,
		window:     window,
	}
}

// round reads, claims and finishes up to k jobs, and returns how many it finished: 0
// when none was left to claim.
func (f *floorRounds) round(ctx context.Context, s *r.Session) (int, error) {
	lo := []any{r.MinVal, r.MinVal, r.MinVal, r.MinVal}
	hi := []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
	index := f.read.Between(lo, hi, r.BetweenOpts{Index: rdb.IndexClaim}).OrderBy(r.OrderByOpts{Index: r.Desc(rdb.IndexClaim)})
	read := func(window int) ([]string, error) {
		term := index
		if window > 0 {
			term = term.Limit(window)
		}
		if f.lastChars != nil {
			term = term.Filter(func(doc r.Term) r.Term { return r.Expr(f.lastChars).Contains(doc.Field("id").Slice(-1)) })
		}
		var ids []string
		if err := readAll(ctx, s, term.Limit(f.k).Field("id"), &ids); err != nil {
			return nil, fmt.Errorf("floor read: %w", err)
		}
		return ids, nil
	}
	ids, err := read(f.window)
	if err == nil && len(ids) == 0 && f.window > 0 {
		ids, err = read(0)
	}
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	claim := f.table.GetAll(rdb.Anys(ids)...).Update(func(row r.Term) any {
		return r.Branch(row.Field("status").Eq("waiting"), map[string]any{
			"status":       "active",
			"dateStarted":  r.Now(),
			"processCount": row.Field("processCount").Add(1),
			"log":          row.Field("log").Append(f.claimEntry),
		}, nil)
	}, r.UpdateOpts{ReturnChanges: true})
	res, err := writeOne(ctx, s, claim)
	if err != nil {
		return 0, fmt.Errorf("floor claim: %w", err)
	}
	if res.Replaced != len(ids) || len(res.Changes) != len(ids) {
		return 0, fmt.Errorf("floor claim: replaced %d of %d", res.Replaced, len(ids))
	}
	won := make([]any, 0, len(res.Changes))
	for _, c := range res.Changes {
		doc, _ := c.NewValue.(map[string]any)
		won = append(won, doc["id"])
	}
	finish := f.table.GetAll(won...).Update(func(row r.Term) any {
		return r.Branch(row.Field("status").Eq("active"), map[string]any{
			"status":       "completed",
			"dateFinished": r.Now(),
			"progress":     100,
			"log":          row.Field("log").Append(f.doneEntry),
		}, nil)
	})
	if res, err = writeOne(ctx, s, finish); err != nil {
		return 0, fmt.Errorf("floor finish: %w", err)
	}
	if res.Replaced != len(won) {
		return 0, fmt.Errorf("floor finish: replaced %d of %d", res.Replaced, len(won))
	}
	return len(won), nil
}

// floorInsert writes the documents AddJob writes for n jobs with plain inserts of
// addChunk documents, one after the other: what an AddJob of n jobs costs at least.
func floorInsert(ctx context.Context, addr string, n int, cpu cpuMeter) (result, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return result{}, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return result{}, err
	}
	defer q.Stop(context.Background())
	docs := make([]any, n)
	for i := range docs {
		j := q.CreateJob(map[string]any{"n": i})
		j.Status, j.QueueID = job.Waiting, q.ID()
		j.Log = []job.LogEntry{rdb.NewLog(j, q.ID(), nil, job.MessageAdded, job.Information, job.Waiting)}
		docs[i] = j.Document()
	}
	table := r.DB(db).Table(q.Name())
	const chunk = 1000
	cpuUsed := cpu.span()
	start := time.Now()
	for from := 0; from < n; from += chunk {
		res, err := writeOne(ctx, s, table.Insert(docs[from:min(from+chunk, n)]))
		if err != nil {
			return result{}, fmt.Errorf("floor insert: %w", err)
		}
		if res.Inserted != min(chunk, n-from) {
			return result{}, fmt.Errorf("floor insert: %d of %d inserted", res.Inserted, min(chunk, n-from))
		}
	}
	elapsed := time.Since(start)
	return result{jobsPerSec: float64(n) / elapsed.Seconds(), cpu: cpuUsed(), jobs: n}, nil
}

// addWithLibrary adds n jobs to the default queue of db through the library, so that the
// floor works on the very documents and indexes the library's measurement does.
func addWithLibrary(ctx context.Context, addr, db string, n int) error {
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return err
	}
	defer q.Stop(context.Background())
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	_, err = q.AddJob(ctx, jobs...)
	return err
}

func readAll(ctx context.Context, s *r.Session, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	return cur.All(dst)
}

func writeOne(ctx context.Context, s *r.Session, term r.Term) (rdb.WriteResult, error) {
	var res rdb.WriteResult
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return res, err
	}
	defer cur.Close()
	if err := cur.One(&res); err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("%d errors: %s", res.Errors, res.FirstError)
	}
	return res, nil
}
