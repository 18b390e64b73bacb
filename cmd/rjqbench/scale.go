package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/bulk"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Users keep finished jobs for months: the scale measurement fills a queue's table with n
// finished jobs in the Node format (completed, with a few cancelled and terminated, their
// dateFinished spread over the last 30 days), then measures what must not grow with n:
// Summary, the dashboard's calls, processing at concurrency 50, processing while a
// retention pass removes the jobs older than 7 days, and the worker's live heap.

// scaleResult is what one table size measured.
type scaleResult struct {
	n                     int
	summary               time.Duration
	process, duringRemove float64
	// beforeRemove and afterRemove are batches just before the retention pass and just
	// after it: a table gets slower batch after batch, so the pass is judged against the
	// batches on each side of it, not against the first.
	beforeRemove, afterRemove float64
	// beforeBulk and duringBulk are batches just before and during an operator's bulk
	// remove, which beforeRemove follows.
	beforeBulk, duringBulk float64
	bulkRemoved            int
	bulkTook               time.Duration
	removed                int
	removeTook             time.Duration
	// removeCut is set when the pass was stopped after -scale-retention.
	removeCut       bool
	firstTally      time.Duration
	floor           float64
	heapMiB         float64
	serverCPUPerJob string
	dashboard       []dashboardCall
}

// scaleJobs is how many jobs each processing measurement of -scale runs.
const scaleJobs = 5000

// scaleDB (-scale-db) is a database of an earlier -scale run to top up and keep, and
// scaleRetention (-scale-retention) how long the retention pass may run before it is
// stopped (0: until it ends; at 10⁶ jobs it takes most of an hour).
var (
	scaleDB        string
	scaleRetention time.Duration
)

func measureScale(ctx context.Context, addr string, n int, cpu cpuMeter) (scaleResult, error) {
	res := scaleResult{n: n}
	s, db, q, done, err := filledTable(ctx, addr, n)
	if err != nil {
		return res, err
	}
	defer done()
	if err := measureReads(ctx, s, addr, db, q, &res); err != nil {
		return res, err
	}
	events := q.Events(ctx, queue.EventCompleted, queue.EventError)
	if err := q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		return res, err
	}
	// The fill's writes are still being flushed: measure on a quiet server.
	cpu.settleWithin(5 * time.Minute)
	cpuUsed := cpu.span()
	if res.process, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return res, err
	}
	res.serverCPUPerJob = perJob(cpuUsed(), scaleJobs)
	// The floor on the same table, the queue paused meanwhile.
	if err := q.Pause(ctx, false); err != nil {
		return res, err
	}
	jobs := make([]*job.Job, scaleJobs)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return res, err
	}
	fl, err := floorLoop(ctx, s, db, 50, scaleJobs, cpu)
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	res.floor = fl.jobsPerSec
	if err := q.Resume(ctx, false); err != nil {
		return res, err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.heapMiB = float64(ms.HeapAlloc) / (1 << 20)

	err = processDuringRetention(ctx, addr, db, s, q, events, &res)
	return res, err
}

// measureReads makes the first tally of the table, as a Queue Master does so that
// Summary reads it, and times it, Summary and the dashboard's calls.
func measureReads(ctx context.Context, s *r.Session, addr, db string, q *queue.Queue, res *scaleResult) error {
	start := time.Now()
	if err := master.AdvanceTally(ctx, master.Target{Session: s, DB: db, Table: queue.DefaultName, QueueID: "rjqbench"}); err != nil {
		return fmt.Errorf("first tally: %w", err)
	}
	res.firstTally = time.Since(start)
	var times []time.Duration
	for range 5 {
		start := time.Now()
		if _, err := q.Summary(ctx); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	res.summary = times[len(times)/2]
	var err error
	if res.dashboard, err = dashboardTimes(ctx, addr, db); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// processDuringRetention measures the worker q processing batches: one just before an
// operator's bulk remove of the completed jobs finished more than 27 days ago (about a
// tenth of those filled), one while it runs, one between it and a retention pass (a Queue
// Master on the same table removing the jobs older than 7 days, about three quarters),
// one while that runs, and one after it. Each removal is waited for, and judged against
// the batches on each side of it.
func processDuringRetention(ctx context.Context, addr, db string, s *r.Session, q *queue.Queue, events <-chan queue.Event, res *scaleResult) error {
	var err error
	if res.beforeBulk, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return err
	}
	bulkDone := make(chan error, 1)
	start := time.Now()
	go func() {
		var err error
		res.bulkRemoved, err = bulk.Remove(ctx, s, r.DB(db).Table(queue.DefaultName), bulk.Filter{Status: string(job.Completed)}, time.Now().Add(-27*24*time.Hour), nil)
		res.bulkTook = time.Since(start)
		bulkDone <- err
	}()
	if res.duringBulk, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return err
	}
	log.Printf("scale: process %.0f jobs/s before a bulk remove, %.0f during it", res.beforeBulk, res.duringBulk)
	if err := <-bulkDone; err != nil {
		return fmt.Errorf("bulk remove: %w", err)
	}
	if res.beforeRemove, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return err
	}
	master, err := newMaster(ctx, addr, db, 7*24*time.Hour)
	if err != nil {
		return err
	}
	defer master.Stop(context.Background())
	removed := make(chan error, 1)
	reviewCtx, stopReview := context.WithCancel(ctx)
	defer stopReview()
	var before int
	if err := readOne(ctx, s, r.DB(db).Table(queue.DefaultName).Count(), &before); err != nil {
		return err
	}
	start = time.Now()
	go func() {
		rv, err := master.Review(reviewCtx)
		res.removed = rv.Removed
		res.removeTook = time.Since(start)
		removed <- err
	}()
	if res.duringRemove, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return err
	}
	log.Printf("scale: process %.0f jobs/s during the retention pass", res.duringRemove)
	if scaleRetention > 0 {
		// Cut short: the pass is judged on the batch it ran beside.
		time.AfterFunc(max(scaleRetention-time.Since(start), 0), stopReview)
	}
	if err := <-removed; err != nil && reviewCtx.Err() == nil {
		return fmt.Errorf("retention review: %w", err)
	}
	if reviewCtx.Err() != nil {
		var after int
		if err := readOne(ctx, s, r.DB(db).Table(queue.DefaultName).Count(), &after); err != nil {
			return err
		}
		res.removed, res.removeCut = before+scaleJobs-after, true
	}
	res.afterRemove, err = processBatch(ctx, q, events, scaleJobs)
	return err
}

// filledTable makes a scratch database whose queue table holds n finished jobs, and a
// worker queue of concurrency 50 on it (no changefeed, keeping finished jobs); done
// stops the queue and drops the database. With -scale-db, it tops up that database's
// table to n jobs instead, and keeps it.
func filledTable(ctx context.Context, addr string, n int) (s *r.Session, db string, q *queue.Queue, done func(), err error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return nil, "", nil, nil, err
	}
	have := 0
	if scaleDB != "" {
		db, drop = scaleDB, func() { s.Close() }
		if err := readOne(ctx, s, r.DB(db).Table(queue.DefaultName).Count(), &have); err != nil {
			drop()
			return nil, "", nil, nil, fmt.Errorf("-scale-db %s: %w", db, err)
		}
	}
	log.Printf("scale: %s holds %d jobs; filling to %d", db, have, n)
	if err := fillFinished(ctx, addr, db, have, n); err != nil {
		drop()
		return nil, "", nil, nil, fmt.Errorf("fill %d finished jobs: %w", n, err)
	}
	q, err = newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true, Concurrency: 50, RemoveFinishedJobs: queue.KeepFinishedJobs})
	if err != nil {
		drop()
		return nil, "", nil, nil, err
	}
	return s, db, q, func() { _ = q.Stop(context.Background()); drop() }, nil
}

// newMaster opens a queue on db that reviews only when asked, removing finished jobs
// older than keep.
func newMaster(ctx context.Context, addr, db string, keep time.Duration) (*queue.Queue, error) {
	host, port := splitAddr(addr)
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db},
		&queue.Options{DatabaseInitDelay: -1, MasterInterval: 24 * time.Hour, NoChangeFeed: true, RemoveFinishedJobs: keep})
	if err != nil {
		return nil, err
	}
	return q, q.Ready(ctx)
}

// processBatch adds n jobs to a processing queue, paused meanwhile, and returns the rate
// at which they complete once it resumes.
func processBatch(ctx context.Context, q *queue.Queue, events <-chan queue.Event, n int) (float64, error) {
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	if err := q.Pause(ctx, false); err != nil {
		return 0, err
	}
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := q.Resume(ctx, false); err != nil {
		return 0, err
	}
	deadline := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case e := <-events:
			if e.Type == queue.EventError {
				return 0, e.Err
			}
			done++
		case <-deadline:
			return 0, fmt.Errorf("%d of %d jobs done in 10 minutes", done, n)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// fillFinished inserts n finished jobs in the Node format into db's default queue table,
// through a connection of its own that is closed afterwards (the driver keeps the
// buffers of big batches for the life of an r.Session).
func fillFinished(ctx context.Context, addr, db string, from, n int) error {
	if from >= n {
		return nil
	}
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return err
	}
	id := q.ID()
	_ = q.Stop(ctx)
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer s.Close()
	table := r.DB(db).Table(queue.DefaultName)
	now := time.Now().UTC()
	const batch = 2000
	docs := make([]any, 0, batch)
	for i := from; i < n; i++ {
		docs = append(docs, finishedDoc(id, now, i))
		if len(docs) == batch || i == n-1 {
			res, err := writeOne(ctx, s, table.Insert(docs, r.InsertOpts{Durability: "soft"}))
			if err != nil {
				return err
			}
			if res.Inserted != len(docs) {
				return fmt.Errorf("inserted %d of %d", res.Inserted, len(docs))
			}
			docs = docs[:0]
		}
	}
	return nil
}

// finishedDoc is a job that finished within the 30 days before now: mostly completed,
// one in fifty cancelled and one in fifty terminated.
func finishedDoc(queueID string, now time.Time, i int) map[string]any {
	finished := now.Add(-time.Duration(rand.Int64N(int64(30 * 24 * time.Hour)))).Truncate(time.Millisecond)
	j := job.New(map[string]any{"n": i}, job.DefaultOptions())
	j.DateCreated = finished.Add(-2 * time.Second)
	j.DateEnable = j.DateCreated
	j.DateStarted = finished.Add(-time.Second)
	j.DateFinished = finished
	j.QueueID, j.ProcessCount, j.Progress = queueID, 1, 100
	j.Status = job.Completed
	switch i % 50 {
	case 1:
		j.Status = job.Cancelled
	case 2:
		j.Status, j.RetryCount = job.Terminated, j.RetryMax
	}
	for _, m := range []string{job.MessageAdded, job.MessageActive, job.MessageCompleted} {
		e := rdb.NewLog(j, queueID, nil, m, job.Information, j.Status)
		e.Date = finished
		j.Log = append(j.Log, e)
	}
	return j.Document()
}

// scaleRows measures at each table size of list and prints a table of its own.
func scaleRows(ctx context.Context, addr, list string, cpu cpuMeter) {
	fmt.Printf("\n| finished jobs in the table | first tally | Summary | process C=50, jobs/s | server CPU/job | floor k=50, jobs/s | process during a retention pass, jobs/s (just before / just after it; ratio to their mean) | removed by it | its time | process during a bulk remove of the completed jobs older than 27 days, jobs/s (just before / just after; ratio) | removed by it | its time | worker heap | slowest dashboard call (median of 5) |\n")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			log.Fatalf("-scale: want counts such as 0,100000, got %q", list)
		}
		res, err := measureScale(ctx, addr, n, cpu)
		if err != nil {
			log.Fatalf("scale %d: %v", n, err)
		}
		fmt.Printf("| %d | %s | %s | %.0f | %s | %.0f | %.0f (%.0f / %.0f; %.2f×) | %d | %s | %.0f (%.0f / %.0f; %.2f×) | %d | %s | %.1f MiB | %s |\n", res.n, res.firstTally.Round(time.Millisecond), ms(res.summary), res.process, res.serverCPUPerJob, res.floor,
			res.duringRemove, res.beforeRemove, res.afterRemove, 2*res.duringRemove/(res.beforeRemove+res.afterRemove),
			res.removed, cut(res.removeTook.Round(time.Millisecond), res.removeCut),
			res.duringBulk, res.beforeBulk, res.beforeRemove, 2*res.duringBulk/(res.beforeBulk+res.beforeRemove),
			res.bulkRemoved, res.bulkTook.Round(time.Millisecond), res.heapMiB, slowest(res.dashboard))
	}
}

// cut formats the time of a removal, stopped before it ended when stopped is set.
func cut(d time.Duration, stopped bool) string {
	if stopped {
		return fmt.Sprintf("stopped after %s", d)
	}
	return d.String()
}

// readOne reads term's one value into dst.
func readOne(ctx context.Context, s *r.Session, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	defer cur.Close()
	return cur.One(dst)
}
