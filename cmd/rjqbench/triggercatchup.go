package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The catch-up part bulk-inserts n documents into the watched table while no runner
// runs, as a night of writes at 100 a second leaves them: each with its own updatedAt,
// the insert's r.now() less (n − i) × versionSpacing for document i (distinct, rising
// with i, all in the past). Then it declares the trigger on a Queue Master and times it
// until the trigger has made n jobs and its lag is zero.
//
// Meanwhile another queue of the same table (concurrency 50, no changefeed) processes
// plain jobs in batches of triggerBacklog, in turns: catchUpOn batches with the runner
// catching up, then one without it (its Queue Master stopped; the next one declares
// the trigger again and resumes from its cursor), so that the batches with and without
// the catch-up see a table of the same size (a table's size alone slows processing: 10⁵
// more jobs, waiting or finished, cost a quarter of the rate). The trigger's jobs are of
// the lowest priority and due in a day, so that the worker never runs them: what is
// measured is the catch-up's weight on the server, not the worker's share of its slots.
// The worker removes each plain job as it finishes (RemoveFinishedJobsImmediately), or
// the million plain jobs a catch-up of 10⁶ versions outlasts would grow the table more
// than the catch-up does.

// insertBatch is how many documents one insert of the catch-up part writes.
const insertBatch = 2000

// versionSpacing is the time between the updatedAt of two documents the catch-up part
// inserts: 100 writes a second. A runner that resumes reads again the versions of its
// re-scan window (5 s): 500 of them.
const versionSpacing = 10 * time.Millisecond

// catchUpWindows is how many batches of plain jobs are processed before and after the
// catch-up; catchUpOn is how many are processed with the runner catching up between two
// without it.
const catchUpWindows, catchUpOn = 3, 3

// procWindows sums batches of plain jobs processed: jobs done, the time they took, and
// the server's CPU over that time.
type procWindows struct {
	batches, jobs int
	took, cpu     time.Duration
}

// add adds one batch's figures.
func (p *procWindows) add(o procWindows) {
	p.batches += o.batches
	p.jobs += o.jobs
	p.took += o.took
	p.cpu += o.cpu
}

// rate is the jobs done a second.
func (p procWindows) rate() float64 {
	if p.took <= 0 {
		return 0
	}
	return float64(p.jobs) / p.took.Seconds()
}

// cores is the server's CPU over the batches' time, in cores.
func (p procWindows) cores() float64 {
	if p.took <= 0 {
		return 0
	}
	return p.cpu.Seconds() / p.took.Seconds()
}

// catchUpResult is what the catch-up part measured.
type catchUpResult struct {
	n          int
	insertTook time.Duration
	// ran is how long a runner ran, in turns (the declarations to the stops, the last to
	// caught up), over the wall time took; cpu is the server's over ran, alone.
	ran, took, cpu time.Duration
	turns          int
	// rest is what the runner caught up alone after the last turn (-trigger-turns): the
	// versions made and the time it took.
	restJobs int64
	rest     time.Duration
	stat     queue.TriggerStat
	// The batches of plain jobs: before the catch-up, with the runner catching up (on)
	// and without it (off, in turn), and after it.
	before, on, off, after procWindows
	found                  int // the trigger's jobs in the table at the end
}

// triggerCatchUpRows measures the catch-up of n versions, with triggerIdle alone first,
// and prints it.
func (b bench) triggerCatchUpRows(n int) {
	var idle catchUpResult
	if triggerIdle {
		var err error
		if idle, err = measureCatchUp(b.ctx, b.addr, n, b.cpu, false); err != nil {
			fatalf("trigger catch-up alone: %v", err)
		}
	}
	res, err := measureCatchUp(b.ctx, b.addr, n, b.cpu, true)
	if err != nil {
		fatalf("trigger catch-up: %v", err)
	}
	fmt.Printf("\n| trigger: catch-up of %d versions written while no runner ran (updatedAt: the insert's r.now() − (N − i) × %s, distinct) | |\n| --- | --- |\n", n, versionSpacing)
	fmt.Printf("| bulk insert of the versions (batches of %d) | %s, %.0f versions/s |\n", insertBatch, res.insertTook.Round(time.Second), float64(n)/res.insertTook.Seconds())
	if triggerIdle {
		fmt.Printf("| catch-up alone (no other work; a run of its own): AddTrigger to caught up (lag %s, %d jobs made, %d found) | %s, **%.0f versions/s**; server %.2f cores, %s a version |\n",
			idle.stat.Lag, idle.stat.Jobs, idle.found, idle.ran.Round(100*time.Millisecond), float64(n)/idle.ran.Seconds(), idle.cpu.Seconds()/idle.ran.Seconds(), perJob(idle.cpu, n))
	}
	fmt.Printf("| catch-up while plain jobs are processed, the runner stopped every %d batches for one (lag %s, %d jobs made, %d found) | runner %s in %d turns, **%.0f versions/s**; %s in all |\n",
		catchUpOn, res.stat.Lag, res.stat.Jobs, res.found, res.ran.Round(100*time.Millisecond), res.turns, float64(n)/res.ran.Seconds(), res.took.Round(time.Second))
	if res.rest > 0 {
		fmt.Printf("| of which the rest alone, after %d turns | %d versions in %s, **%.0f versions/s** |\n",
			res.turns, res.restJobs, res.rest.Round(100*time.Millisecond), float64(res.restJobs)/res.rest.Seconds())
	}
	row := func(name string, p procWindows) {
		fmt.Printf("| plain jobs at concurrency 50, removed as they finish, %s (%d batches of %d) | %.0f jobs/s; server %.2f cores, %s a job |\n",
			name, p.batches, triggerBacklog, p.rate(), p.cores(), perJob(p.cpu, p.jobs))
	}
	row("before the catch-up", res.before)
	row("with the runner catching up", res.on)
	row("without it, in turn", res.off)
	row("after it (the runner following, idle)", res.after)
	fmt.Printf("| with ÷ without the catch-up (in turn); ÷ before; ÷ after | **%s**; %s; %s |\n",
		ratio(res.on.rate(), res.off.rate()), ratio(res.on.rate(), res.before.rate()), ratio(res.on.rate(), res.after.rate()))
}

// measureCatchUp runs the catch-up part over n versions: alone, or with batches of plain
// jobs processed before, in turns during, and after it when process is set.
func measureCatchUp(ctx context.Context, addr string, n int, cpu cpuMeter, process bool) (catchUpResult, error) {
	res := catchUpResult{n: n}
	s, db, drop, err := scratch(addr)
	if err != nil {
		return res, err
	}
	defer drop()
	w, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true, Concurrency: 50, RemoveFinishedJobs: queue.RemoveFinishedJobsImmediately})
	if err != nil {
		return res, err
	}
	defer w.Stop(context.Background())
	if err := userTable(ctx, s, db); err != nil {
		return res, err
	}
	if res.insertTook, err = insertVersions(ctx, addr, db, n); err != nil {
		return res, err
	}
	cpu.settleWithin(5 * time.Minute)
	run := &catchUpRun{ctx: ctx, addr: addr, db: db, cpu: cpu, res: &res}
	run.watch, run.logger = newLogWatch()
	defer run.stop()
	if !process {
		err := run.alone()
		return res, errors.Join(err, countLowest(ctx, s, db, &res.found))
	}
	run.w, run.events = w, w.Events(ctx, queue.EventCompleted, queue.EventError)
	if err := w.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		return res, err
	}
	if res.before, err = run.batches(catchUpWindows); err != nil {
		return res, err
	}
	if err := run.inTurns(); err != nil {
		return res, err
	}
	if res.after, err = run.batches(catchUpWindows); err != nil {
		return res, err
	}
	return res, countLowest(ctx, s, db, &res.found)
}

// countLowest counts the jobs of the lowest priority in db's queue table, the trigger's,
// and logs the versions of the watched table that have none, when some have none.
func countLowest(ctx context.Context, s *r.Session, db string, found *int) error {
	jobs := r.DB(db).Table(queue.DefaultName).Filter(r.Row.Field("priority").Eq(int(job.Lowest)))
	if err := readOne(ctx, s, jobs.Count(), found); err != nil {
		return fmt.Errorf("count the trigger's jobs: %w", err)
	}
	var versions int
	if err := readOne(ctx, s, r.DB(db).Table(triggerTable).Count(), &versions); err != nil || *found == versions {
		return err
	}
	var made []float64
	cur, err := jobs.Field("data").Field("n").Run(s, r.RunOpts{Context: ctx})
	if err == nil {
		err = cur.All(&made)
	}
	have := make(map[int]bool, len(made))
	for _, v := range made {
		have[int(v)] = true
	}
	var ids []any
	for i := 0; i < versions && len(ids) < 10; i++ {
		if !have[i] {
			ids = append(ids, i)
		}
	}
	var missing []map[string]any
	if err == nil && len(ids) > 0 {
		if cur, err = r.DB(db).Table(triggerTable).GetAll(ids...).Run(s, r.RunOpts{Context: ctx}); err == nil {
			err = cur.All(&missing)
		}
	}
	log.Printf("trigger catch-up: %d jobs for %d versions; the first versions without one: %v (%v)", *found, versions, missing, err)
	return nil
}

// catchUpRun is one catch-up: the Queue Master that runs the trigger now (nil: none),
// and the worker of plain jobs (nil: none).
type catchUpRun struct {
	ctx      context.Context
	addr, db string
	cpu      cpuMeter
	res      *catchUpResult
	watch    *logWatch
	logger   *slog.Logger
	m, w     *queue.Queue
	events   <-chan queue.Event
	logged   time.Time
}

// declare opens a Queue Master and declares the trigger on it: its runner starts, or
// resumes from the trigger's cursor.
func (c *catchUpRun) declare() error {
	m, err := triggerQueue(c.ctx, c.addr, c.db, queue.Options{NoChangeFeed: true}, c.logger)
	if err != nil {
		return err
	}
	c.m = m
	return m.AddTrigger(c.ctx, queue.Trigger{Name: triggerName, Table: triggerTable, Index: triggerIndex, Job: catchUpJob(m)})
}

// stop stops the Queue Master, and so the runner, if one runs.
func (c *catchUpRun) stop() {
	if c.m != nil {
		_ = c.m.Stop(context.Background())
		c.m = nil
	}
}

// batches processes k batches of plain jobs.
func (c *catchUpRun) batches(k int) (procWindows, error) {
	return plainBatches(c.ctx, c.w, c.events, c.cpu, k)
}

// alone declares the trigger and waits until it has caught up.
func (c *catchUpRun) alone() error {
	used, start := c.cpu.span(), time.Now()
	if err := c.declare(); err != nil {
		return err
	}
	for {
		select {
		case end := <-c.watch.caughtUp:
			c.res.ran, c.res.took, c.res.cpu, c.res.turns = end.Sub(start), end.Sub(start), used(), 1
			return c.finish()
		case <-time.After(time.Minute):
			c.progress(start)
		}
		if time.Since(start) > 3*time.Hour {
			return fmt.Errorf("no catch-up of %d versions within 3 hours", c.res.n)
		}
	}
}

// inTurns runs the catch-up in turns with the plain jobs: catchUpOn batches with a
// runner, one without, until the runner has caught up (a batch that ran past that is
// not counted). The last Queue Master stays, its runner following.
func (c *catchUpRun) inTurns() error {
	start := time.Now()
	for {
		opened := time.Now()
		if err := c.declare(); err != nil {
			return err
		}
		c.res.turns++
		for range catchUpOn {
			batch, err := c.batches(1)
			if err != nil {
				return err
			}
			select {
			case end := <-c.watch.caughtUp:
				c.res.ran += end.Sub(opened)
				c.res.took = end.Sub(start)
				return c.finish()
			default:
				c.res.on.add(batch)
			}
		}
		if triggerTurns > 0 && c.res.turns >= triggerTurns {
			return c.rest(start, opened)
		}
		c.stop()
		c.res.ran += time.Since(opened)
		c.progress(start)
		batch, err := c.batches(1)
		if err != nil {
			return err
		}
		c.res.off.add(batch)
		if time.Since(start) > 6*time.Hour {
			return fmt.Errorf("no catch-up of %d versions within 6 hours", c.res.n)
		}
	}
}

// rest lets the runner opened at opened catch up the rest of the versions alone, timed
// apart from the turns, from start of the first.
func (c *catchUpRun) rest(start, opened time.Time) error {
	restStart := time.Now()
	var made int64
	if stats, err := c.m.Triggers(c.ctx); err == nil && len(stats) == 1 {
		made = stats[0].Jobs
	}
	for {
		select {
		case end := <-c.watch.caughtUp:
			c.res.ran += end.Sub(opened)
			c.res.took = end.Sub(start)
			c.res.rest = end.Sub(restStart)
			err := c.finish()
			c.res.restJobs = c.res.stat.Jobs - made
			return err
		case <-time.After(time.Minute):
			c.progress(start)
		}
		if time.Since(start) > 3*time.Hour {
			return fmt.Errorf("no catch-up of %d versions within 3 hours", c.res.n)
		}
	}
}

// finish reads the trigger's stat once it has caught up, which should show n jobs made
// and no lag (a shortfall is logged: the count of the jobs in the table tells more).
func (c *catchUpRun) finish() error {
	var err error
	c.res.stat, err = waitJobs(c.ctx, c.m, int64(c.res.n), time.Minute)
	if err != nil && c.res.stat.Name != "" {
		log.Printf("trigger catch-up: %v", err)
		return nil
	}
	return err
}

// progress logs the catch-up's progress once a minute at most.
func (c *catchUpRun) progress(start time.Time) {
	if time.Since(c.logged) < time.Minute {
		return
	}
	c.logged = time.Now()
	q := c.m
	if q == nil {
		q = c.w
	}
	if stats, err := q.Triggers(c.ctx); err == nil && len(stats) == 1 {
		log.Printf("trigger catch-up: %d jobs made of %d after %s, lag %s", stats[0].Jobs, c.res.n, time.Since(start).Round(time.Second), stats[0].Lag.Round(time.Second))
	}
}

// catchUpJob is the catch-up's Job func: a job of the lowest priority, due in a day.
func catchUpJob(q *queue.Queue) func(context.Context, map[string]any) (*job.Job, error) {
	return func(_ context.Context, doc map[string]any) (*job.Job, error) {
		return q.CreateJob(map[string]any{"n": doc["n"]}).SetPriority(job.Lowest).SetDateEnable(time.Now().Add(24 * time.Hour)), nil
	}
}

// plainBatches processes k batches of triggerBacklog plain jobs on w, each added while w
// is paused and timed from its resume to its last completion.
func plainBatches(ctx context.Context, w *queue.Queue, events <-chan queue.Event, cpu cpuMeter, k int) (procWindows, error) {
	var sum procWindows
	for range k {
		jobs := make([]*job.Job, triggerBacklog)
		for i := range jobs {
			jobs[i] = w.CreateJob(i)
		}
		if err := w.Pause(ctx, false); err != nil {
			return sum, err
		}
		if _, err := w.AddJob(ctx, jobs...); err != nil {
			return sum, err
		}
		used, start := cpu.span(), time.Now()
		if err := w.Resume(ctx, false); err != nil {
			return sum, err
		}
		deadline := time.After(10 * time.Minute)
		for done := 0; done < len(jobs); {
			select {
			case e := <-events:
				if e.Type == queue.EventError {
					return sum, e.Err
				}
				done++
			case <-deadline:
				return sum, fmt.Errorf("%d of %d plain jobs done in 10 minutes", done, len(jobs))
			}
		}
		sum.add(procWindows{batches: 1, jobs: len(jobs), took: time.Since(start), cpu: used()})
	}
	return sum, nil
}

// insertVersions inserts n documents into the watched table of db, document i holding
// n = i and updatedAt = the insert's r.now() − (n − i) × versionSpacing, through a
// connection of its own, closed afterwards (the driver keeps the buffers of big batches
// for a session's life).
func insertVersions(ctx context.Context, addr, db string, n int) (time.Duration, error) {
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	start, logged := time.Now(), time.Now()
	for lo := 0; lo < n; lo += insertBatch {
		hi := min(lo+insertBatch, n)
		docs := r.Range(lo, hi).Map(func(i r.Term) any {
			return map[string]any{"id": i, "n": i, triggerIndex: r.Now().Sub(r.Expr(n).Sub(i).Mul(versionSpacing.Seconds()))}
		}).CoerceTo("array")
		res, err := r.DB(db).Table(triggerTable).Insert(docs).RunWrite(s, r.RunOpts{Context: ctx})
		if err != nil {
			return 0, fmt.Errorf("insert versions %d to %d: %w", lo, hi, err)
		}
		if res.Inserted != hi-lo {
			return 0, fmt.Errorf("insert versions %d to %d: %d inserted", lo, hi, res.Inserted)
		}
		if time.Since(logged) > 30*time.Second {
			logged = time.Now()
			log.Printf("trigger catch-up: %d of %d versions inserted", hi, n)
		}
	}
	return time.Since(start), nil
}
