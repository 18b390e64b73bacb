package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The query-by-query comparison (-queries) runs the three queries of a round, read k
// candidates, claim them, finish them, as the floor writes them and as the library does
// (internal/rdb's ReadCandidates, Claim and Finish), in turns on one table, and reports
// the server's CPU and the wall time of each query per job. Every write is checked to
// have written every job it was given.

// stage is one query of a round.
type stage struct {
	cpu, wall time.Duration
}

// loopQueries is one way to make the three queries of a round.
type loopQueries struct {
	name   string
	read   func(ctx context.Context, k int) ([]*job.Job, error)
	claim  func(ctx context.Context, jobs []*job.Job) ([]*job.Job, error)
	finish func(ctx context.Context, jobs []*job.Job) error
}

// measureQueries measures the loops over rounds rounds of k jobs each, on one table,
// round by round in turn, so that what the server does besides (a dropped table
// deleted in the background, its cache) weighs on each alike.
// With parts above 1, each loop reads its own part of parts (see rdb.PartOf), so the
// table holds parts times more jobs, and half again, for each to find its k.
func measureQueries(ctx context.Context, addr string, k, rounds, parts int, cpu cpuMeter, makers ...func(q *queue.Queue, s *r.Session, db string) loopQueries) ([][3]stage, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	n := k * rounds * len(makers)
	if parts > 1 {
		n = n * parts * 3 / 2
	}
	if err := addWithLibrary(ctx, addr, db, n); err != nil {
		return nil, err
	}
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return nil, err
	}
	defer q.Stop(context.Background())
	cpu.settle()
	loops := make([]loopQueries, len(makers))
	for i, m := range makers {
		loops[i] = m(q, s, db)
	}
	st := make([][3]stage, len(loops))
	measure := func(l, i int, f func() error) error {
		c0, t0 := cpu.used(), time.Now()
		err := f()
		st[l][i].wall += time.Since(t0)
		st[l][i].cpu += cpu.used() - c0
		return err
	}
	for range rounds {
		for l, lq := range loops {
			var jobs, won []*job.Job
			if err := measure(l, 0, func() (err error) { jobs, err = lq.read(ctx, k); return err }); err != nil {
				return nil, fmt.Errorf("%s read: %w", lq.name, err)
			}
			if len(jobs) != k {
				return nil, fmt.Errorf("%s read: %d of %d", lq.name, len(jobs), k)
			}
			if err := measure(l, 1, func() (err error) { won, err = lq.claim(ctx, jobs); return err }); err != nil {
				return nil, fmt.Errorf("%s claim: %w", lq.name, err)
			}
			if len(won) != k {
				return nil, fmt.Errorf("%s claim: won %d of %d", lq.name, len(won), k)
			}
			if err := measure(l, 2, func() error { return lq.finish(ctx, won) }); err != nil {
				return nil, fmt.Errorf("%s finish: %w", lq.name, err)
			}
		}
	}
	return st, nil
}

// floorQueries are the floor's queries.
func floorQueries(q *queue.Queue, s *r.Session, db string) loopQueries {
	return floorPartQueries(rdb.Part{})(q, s, db)
}

// floorPartQueries are the floor's queries of a worker that reads its part of the jobs
// (part.Of above 1), as the floor processes of -procs do: the claim index's head, the
// ids filtered by their last character.
func floorPartQueries(part rdb.Part) func(q *queue.Queue, s *r.Session, db string) loopQueries {
	return func(_ *queue.Queue, s *r.Session, db string) loopQueries {
		l := floorQueriesOf(s, db)
		if part.Of > 1 {
			var chars []any
			for _, c := range "0123456789abcdef" {
				if rdb.PartOf(string(c), part.Of) == part.Index {
					chars = append(chars, string(c))
				}
			}
			read := r.DB(db).Table(queue.DefaultName, r.TableOpts{ReadMode: "outdated"})
			lo := []any{r.MinVal, r.MinVal, r.MinVal, r.MinVal}
			hi := []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
			l.name = fmt.Sprintf("floor, part of %d", part.Of)
			l.read = func(ctx context.Context, k int) ([]*job.Job, error) {
				var ids []string
				term := read.Between(lo, hi, r.BetweenOpts{Index: rdb.IndexClaim}).OrderBy(r.OrderByOpts{Index: r.Desc(rdb.IndexClaim)}).
					Filter(func(doc r.Term) r.Term { return r.Expr(chars).Contains(doc.Field("id").Slice(-1)) })
				err := readAll(ctx, s, term.Limit(k).Field("id"), &ids)
				jobs := make([]*job.Job, len(ids))
				for i, id := range ids {
					jobs[i] = &job.Job{ID: id}
				}
				return jobs, err
			}
		}
		return l
	}
}

// floorQueriesOf are the floor's queries on db's default queue.
func floorQueriesOf(s *r.Session, db string) loopQueries {
	table := r.DB(db).Table(queue.DefaultName)
	read := r.DB(db).Table(queue.DefaultName, r.TableOpts{ReadMode: "outdated"})
	var none job.Job
	claimEntry := rdb.NewLog(&none, floorQueueID, nil, job.MessageActive, job.Information, job.Active).WithoutData().Document()
	doneEntry := rdb.NewLog(&none, floorQueueID, nil, job.MessageCompleted, job.Information, job.Completed).WithDuration(time.Millisecond).Document()
	lo := []any{r.MinVal, r.MinVal, r.MinVal, r.MinVal}
	hi := []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
	return loopQueries{
		name: "floor",
		read: func(ctx context.Context, k int) ([]*job.Job, error) {
			var ids []string
			err := readAll(ctx, s, read.Between(lo, hi, r.BetweenOpts{Index: rdb.IndexClaim}).OrderBy(r.OrderByOpts{Index: r.Desc(rdb.IndexClaim)}).Limit(k).Field("id"), &ids)
			jobs := make([]*job.Job, len(ids))
			for i, id := range ids {
				jobs[i] = &job.Job{ID: id}
			}
			return jobs, err
		},
		claim: func(ctx context.Context, jobs []*job.Job) ([]*job.Job, error) {
			res, err := writeOne(ctx, s, table.GetAll(idsOf(jobs)...).Update(func(row r.Term) any {
				return r.Branch(row.Field("status").Eq("waiting"), map[string]any{
					"status": "active", "dateStarted": r.Now(), "processCount": row.Field("processCount").Add(1),
					"log": row.Field("log").Append(claimEntry),
				}, nil)
			}, r.UpdateOpts{ReturnChanges: true}))
			if err != nil {
				return nil, err
			}
			won := make([]*job.Job, 0, len(res.Changes))
			for _, c := range res.Changes {
				doc, _ := c.NewValue.(map[string]any)
				j, err := rdb.FromDocument(nil, doc)
				if err != nil {
					return nil, err
				}
				won = append(won, j)
			}
			return won, nil
		},
		finish: func(ctx context.Context, jobs []*job.Job) error {
			res, err := writeOne(ctx, s, table.GetAll(idsOf(jobs)...).Update(func(row r.Term) any {
				return r.Branch(row.Field("status").Eq("active"), map[string]any{
					"status": "completed", "dateFinished": r.Now(), "progress": 100,
					"log": row.Field("log").Append(doneEntry),
				}, nil)
			}))
			if err == nil && res.Replaced != len(jobs) {
				err = fmt.Errorf("replaced %d of %d", res.Replaced, len(jobs))
			}
			return err
		},
	}
}

// libraryQueries are the library's queries, as its producer and completer send them.
func libraryQueries(q *queue.Queue, s *r.Session, db string) loopQueries {
	return libraryPartQueries(rdb.Part{})(q, s, db)
}

// libraryPartQueries are the library's queries of a worker that reads its part of the
// jobs (part.Of above 1), as a worker among part.Of live ones does.
func libraryPartQueries(part rdb.Part) func(q *queue.Queue, s *r.Session, db string) loopQueries {
	return func(q *queue.Queue, s *r.Session, db string) loopQueries { return libraryQueriesOf(q, s, db, part) }
}

func libraryQueriesOf(q *queue.Queue, s *r.Session, db string, part rdb.Part) loopQueries {
	t := &rdb.Table{Session: s, DB: db, Name: q.Name(), RunOpts: queue.DefaultQueryRunOptions(), QueueID: q.ID(), LimitJobLogs: q.LimitJobLogs()}
	name := "library"
	if part.Of > 1 {
		name = fmt.Sprintf("library, part of %d", part.Of)
	}
	return loopQueries{
		name: name,
		read: func(ctx context.Context, k int) ([]*job.Job, error) {
			c, err := t.ReadCandidates(ctx, k, rdb.Skip{Part: part})
			jobs := make([]*job.Job, 0, len(c.List))
			for _, cand := range c.List {
				if cand.Err != nil {
					return nil, cand.Err
				}
				jobs = append(jobs, cand.Job)
			}
			return jobs, err
		},
		claim: func(ctx context.Context, jobs []*job.Job) ([]*job.Job, error) {
			at := time.Now().UTC().Truncate(time.Millisecond)
			claims := make([]rdb.Claim, len(jobs))
			for i, j := range jobs {
				claims[i] = t.NewClaim(j, at, at.Add(time.Minute))
			}
			res, err := t.Claim(ctx, nil, claims)
			return res.Claimed, err
		},
		finish: func(ctx context.Context, jobs []*job.Job) error {
			at := time.Now().UTC().Truncate(time.Millisecond)
			outs := make([]rdb.Outcome, len(jobs))
			for i, j := range jobs {
				tr := rdb.AfterSuccess(j, at)
				e := rdb.NewLog(j, t.QueueID, nil, job.MessageCompleted, tr.LogType, tr.Status).WithDuration(time.Millisecond)
				outs[i] = rdb.Outcome{ID: j.ID, ProcessCount: j.ProcessCount, Status: tr.Status, DateFinished: at,
					DateEnable: &tr.DateEnable, RetryCount: &tr.RetryCount, Progress: &tr.Progress,
					Entry: e, Trunc: rdb.TruncatedLog(j, t.QueueID, t.LimitJobLogs, tr.Status), LogLen: len(j.Log)}
			}
			done, err := t.Finish(ctx, outs)
			if err == nil && len(done) != len(jobs) {
				err = fmt.Errorf("finished %d of %d", len(done), len(jobs))
			}
			return err
		},
	}
}

func idsOf(jobs []*job.Job) []any {
	ids := make([]any, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// queryRows prints the per-query comparison at batch k; with parts above 1, of a worker
// that reads its part of parts (the floor's part 0, the library's part 1).
func queryRows(ctx context.Context, addr string, k, rounds, parts int, cpu cpuMeter) {
	of := ""
	if parts > 1 {
		of = fmt.Sprintf(", each reading its part of %d", parts)
	}
	fmt.Printf("\n| query, batch %d%s, per job | floor: server CPU | wall | library: server CPU | wall | CPU ÷ floor |\n", k, of)
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	makers := []func(q *queue.Queue, s *r.Session, db string) loopQueries{floorPartQueries(rdb.Part{Index: 0, Of: parts}), libraryPartQueries(rdb.Part{Index: 1 % max(parts, 1), Of: parts})}
	var extra []string // the names of the loops after those two
	if slicesWanted && parts > 1 {
		makers = append(makers, sliceQueries(rdb.Part{Index: 2 % parts, Of: parts}))
		extra = append(extra, "through the slice index")
	}
	if shapesWanted && parts <= 1 {
		makers = append(makers, floorShapeQueries(nil, false), floorShapeQueries([]any{"data", "log"}, false), floorShapeQueries(nil, true))
		extra = append(extra, "floor's read, whole documents", "floor's read, documents without data and log",
			"floor's read, whole documents, k + 32 entries filtered to the due ones as the library's")
	}
	st, err := measureQueries(ctx, addr, k, rounds, parts, cpu, makers...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fl, lib := st[0], st[1]
	n := float64(k * rounds)
	per := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)/n) }
	var flc, libc time.Duration
	for i, what := range []string{"read candidates", "claim", "finish"} {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", what, per(fl[i].cpu), per(fl[i].wall), per(lib[i].cpu), per(lib[i].wall), ratio(float64(lib[i].cpu), float64(fl[i].cpu)))
		flc += fl[i].cpu
		libc += lib[i].cpu
	}
	fmt.Printf("| all three | %s | | %s | | %s |\n", per(flc), per(libc), ratio(float64(libc), float64(flc)))
	for x, name := range extra {
		sl := st[2+x]
		var slc time.Duration
		for i, what := range []string{"read candidates", "claim", "finish"} {
			fmt.Printf("| … %s: %s | | | %s | %s | %s |\n", name, what, per(sl[i].cpu), per(sl[i].wall), ratio(float64(sl[i].cpu), float64(fl[i].cpu)))
			slc += sl[i].cpu
		}
		fmt.Printf("| … %s: all three | | | %s | | %s |\n", name, per(slc), ratio(float64(slc), float64(flc)))
	}
}

// floorShapeQueries are the floor's queries with a read that returns documents rather
// than ids, without the fields of without (nil: whole), and, with due, that reads k + 32
// entries and keeps the due ones as the library's head read does: what the shape of a
// candidate read costs the server.
func floorShapeQueries(without []any, due bool) func(q *queue.Queue, s *r.Session, db string) loopQueries {
	return func(_ *queue.Queue, s *r.Session, db string) loopQueries {
		read := r.DB(db).Table(queue.DefaultName, r.TableOpts{ReadMode: "outdated"})
		lo := []any{r.MinVal, r.MinVal, r.MinVal, r.MinVal}
		hi := []any{r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal}
		l := floorQueriesOf(s, db)
		l.read = func(ctx context.Context, k int) ([]*job.Job, error) {
			term := read.Between(lo, hi, r.BetweenOpts{Index: rdb.IndexClaim}).OrderBy(r.OrderByOpts{Index: r.Desc(rdb.IndexClaim)}).Limit(k)
			if due {
				term = read.Between(lo, hi, r.BetweenOpts{Index: rdb.IndexClaim}).OrderBy(r.OrderByOpts{Index: r.Desc(rdb.IndexClaim)}).Limit(k + 32).
					Filter(func(doc r.Term) r.Term {
						enable := doc.Field("dateEnable").Default(nil)
						return enable.TypeOf().Ne("PTYPE<TIME>").Or(enable.Le(r.Now()))
					}).Limit(k)
			}
			if without != nil {
				term = term.Without(without...)
			}
			var docs []map[string]any
			err := readAll(ctx, s, term, &docs)
			jobs := make([]*job.Job, len(docs))
			for i, doc := range docs {
				id, _ := doc["id"].(string)
				jobs[i] = &job.Job{ID: id}
			}
			return jobs, err
		}
		return l
	}
}

// probeSliceIndex is the index -queries-slices makes to try a worker's part read by the
// id's last character: the claim index's key behind that character, for waiting and
// failed jobs. Not one of the library's indexes: a measurement of a design.
const probeSliceIndex = "rjqProbeSliceDesc"

// sliceQueries are the floor's claim and finish with a read of part through
// probeSliceIndex, which it makes on the table: each of the part's characters' ranges
// read from its head for its share of k (and 8 more), the shares merged in the claim
// index's order.
func sliceQueries(part rdb.Part) func(q *queue.Queue, s *r.Session, db string) loopQueries {
	return func(_ *queue.Queue, s *r.Session, db string) loopQueries {
		table := r.DB(db).Table(queue.DefaultName)
		claimKey := rdb.IndexFunc(rdb.IndexClaim)
		if _, err := table.IndexCreateFunc(probeSliceIndex, func(row r.Term) any {
			return r.Do(claimKey(row), func(key r.Term) any {
				return r.Branch(key.Eq(nil), nil, r.Expr([]any{row.Field("id").Slice(-1)}).Add(key))
			})
		}).RunWrite(s); err != nil {
			log.Fatalf("-queries-slices: %v", err)
		}
		if err := table.IndexWait(probeSliceIndex).Exec(s); err != nil {
			log.Fatalf("-queries-slices: %v", err)
		}
		var chars []string
		for _, c := range "0123456789abcdef" {
			if rdb.PartOf(string(c), part.Of) == part.Index {
				chars = append(chars, string(c))
			}
		}
		read := r.DB(db).Table(queue.DefaultName, r.TableOpts{ReadMode: "outdated"})
		l := floorQueriesOf(s, db)
		l.name = fmt.Sprintf("slice index, part of %d", part.Of)
		l.read = func(ctx context.Context, k int) ([]*job.Job, error) {
			share := (k+len(chars)-1)/len(chars) + 8
			ranges := make([]any, len(chars))
			for i, c := range chars {
				ranges[i] = read.Between([]any{c, r.MinVal, r.MinVal, r.MinVal, r.MinVal}, []any{c, r.MaxVal, r.MaxVal, r.MaxVal, r.MaxVal},
					r.BetweenOpts{Index: probeSliceIndex, RightBound: "closed"}).OrderBy(r.OrderByOpts{Index: r.Desc(probeSliceIndex)}).Limit(share).CoerceTo("array")
			}
			var docs [][]map[string]any
			if err := readAll(ctx, s, r.Expr(ranges), &docs); err != nil {
				return nil, err
			}
			var jobs []*job.Job
			for _, rng := range docs {
				for _, doc := range rng {
					j, err := rdb.FromDocument(nil, doc)
					if err != nil {
						return nil, err
					}
					jobs = append(jobs, j)
				}
			}
			slices.SortFunc(jobs, func(a, b *job.Job) int { return rdb.KeyOf(a).Compare(rdb.KeyOf(b)) })
			return jobs[:min(k, len(jobs))], nil
		}
		return l
	}
}
