package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The exact run (-exact K:N:L): 4 worker processes at concurrency 20 process K keys of N
// jobs each, every key capped at L running jobs, first as groups (job.SetGroup and the
// default SetGroupLimit), then as job names (Limit.Running). Once a third of the jobs
// completed, one process is SIGKILLed and another started in its place; a Queue Master in
// this process takes the dead one's jobs back when their leases end. Each handler says
// when it begins and ends; a run the kill cut short ends at the kill. The parent counts,
// by key, the most runs at once, and checks that every job completed once.

// exactKey is the key a job of the exact run counts under: its group, else its name.
func exactKey(j *job.Job) string {
	if g := j.Group(); g != "" {
		return g
	}
	return j.Name
}

// exactHandler is an exact child's handler: "begin KEY ID START" when it starts and
// "end KEY ID START END PID" when it ends, in Unix nanoseconds, after 20 ms.
func exactHandler(say func(string, ...any)) func(context.Context, *job.Job) (any, error) {
	return func(ctx context.Context, j *job.Job) (any, error) {
		start := time.Now().UnixNano()
		say("begin %s %s %d", exactKey(j), j.ID, start)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		say("end %s %s %d %d %d", exactKey(j), j.ID, start, time.Now().UnixNano(), os.Getpid())
		return nil, nil
	}
}

// exactRows makes the exact run for groups and for names, and prints what each found.
func (b bench) exactRows(spec string) {
	f := strings.Split(spec, ":")
	if len(f) != 3 {
		log.Fatalf("-exact: want keys:jobs:limit such as 200:20:3, got %q", spec)
	}
	keys, _ := strconv.Atoi(f[0])
	each, _ := strconv.Atoi(f[1])
	limit, _ := strconv.Atoi(f[2])
	if keys < 1 || each < 1 || limit < 1 {
		log.Fatalf("-exact: want positive keys:jobs:limit, got %q", spec)
	}
	for _, byName := range []bool{false, true} {
		b.exactRun(keys, each, limit, byName)
	}
}

// exactRun makes one exact run of keys keys of each jobs, capped at limit, as job names
// (byName) or as groups, and prints what it found.
func (b bench) exactRun(keys, each, limit int, byName bool) {
	const procs, concurrency = 4, 20
	_, db, drop, err := scratch(b.addr)
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	defer drop()
	master := b.exactMaster(db)
	defer master.Stop(context.Background())
	jobs := b.addExact(master, keys, each, limit, byName)
	w := exactWorkers{addr: b.addr, db: db, concurrency: concurrency, lines: make(chan string, 1<<16)}
	if started, err := w.start(procs); err != nil {
		finish(started)
		log.Fatalf("exact: %v", err)
	}
	start := time.Now()
	goAll(w.children)
	t := newExactTally(w.children[0].cmd.Process.Pid)
	w.collect(t, len(jobs))
	took := time.Since(start)
	finish(w.children)
	t.cutAtKill()
	most, over := t.mostAtOnce(limit)
	twice, again := t.duplicates()
	sum, err := master.Summary(b.ctx)
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	completions := b.completionsInLogs(master, jobs)
	kind := "groups (SetGroupLimit)"
	if byName {
		kind = "job names (Limit.Running)"
	}
	fmt.Printf("| exact: %d %s of %d jobs, limit %d, over %d worker processes at C=%d, one SIGKILLed and replaced at a third: most running of a key at once, keys over the limit, jobs run to their end twice (not counting those the killed worker ended before its outcome write), jobs not completed in the table, completions in the jobs' logs beyond one each | %d, %d, %d, %d, %d | | | | | | | | |\n",
		keys, kind, each, limit, procs, concurrency, most, over, twice, len(jobs)-sum.Completed, completions-len(jobs))
	fmt.Printf("| … jobs the killed worker ran to their end whose outcome it did not write, run again | %d | | | | | | | | |\n", again)
	fmt.Printf("| … that run's time, s (the killed worker's jobs come back when their leases end) | %.1f | | | | | | | | |\n", took.Seconds())
}

// exactMaster opens the Queue Master of an exact run on db: it reviews the leases of
// the killed worker's jobs.
func (b bench) exactMaster(db string) *queue.Queue {
	host, port := splitAddr(b.addr)
	master, err := queue.New(b.ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &queue.Options{DatabaseInitDelay: -1, NoChangeFeed: true})
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	if err := master.Ready(b.ctx); err != nil {
		log.Fatalf("exact: %v", err)
	}
	return master
}

// addExact sets the limit of each of keys keys (job names, byName, or groups) and adds
// each jobs of every key through q, place by place across the keys.
func (b bench) addExact(q *queue.Queue, keys, each, limit int, byName bool) []*job.Job {
	var jobs []*job.Job
	for i := range each {
		for k := range keys {
			j := q.CreateJob(i)
			if byName {
				j.SetName(fmt.Sprintf("name-%d", k))
			} else {
				j.SetGroup(fmt.Sprintf("group-%d", k))
			}
			jobs = append(jobs, j)
		}
	}
	if byName {
		for k := range keys {
			if err := q.SetLimit(b.ctx, fmt.Sprintf("name-%d", k), queue.Limit{Running: limit}); err != nil {
				log.Fatalf("exact: %v", err)
			}
		}
	} else if err := q.SetGroupLimit(b.ctx, "", limit); err != nil {
		log.Fatalf("exact: %v", err)
	}
	for chunk := range slices.Chunk(jobs, 1000) {
		if _, err := q.AddJob(b.ctx, chunk...); err != nil {
			log.Fatalf("exact: add: %v", err)
		}
	}
	return jobs
}

// completionsInLogs counts the completions in the logs of jobs, as the table holds
// them. Every job's log holds one: a job run again after the killed worker's run had not
// completed in the table.
func (b bench) completionsInLogs(q *queue.Queue, jobs []*job.Job) int {
	completions := 0
	for chunk := range slices.Chunk(jobs, 1000) {
		ids := make([]string, len(chunk))
		for i, j := range chunk {
			ids[i] = j.ID
		}
		got, err := q.GetJob(b.ctx, ids...)
		if err != nil {
			log.Fatalf("exact: %v", err)
		}
		for _, j := range got {
			for _, e := range j.Log {
				if e.Status == job.Completed {
					completions++
				}
			}
		}
	}
	return completions
}

// exactWorkers are the worker processes of an exact run, their lines on one channel.
type exactWorkers struct {
	addr, db    string
	concurrency int
	children    []*child // the ones running
	lines       chan string
}

// start starts n more workers, and forwards their lines; on an error it returns the
// ones it started, for finish.
func (w *exactWorkers) start(n int) ([]*child, error) {
	more, err := startChildren(n, "exact", w.addr, w.db, w.concurrency, false)
	if err != nil {
		return more, err
	}
	for _, c := range more {
		go func() {
			for line := range c.lines {
				w.lines <- line
			}
		}()
	}
	w.children = append(w.children, more...)
	return more, nil
}

// collect reads the workers' lines into t until n jobs completed; once a third did, it
// SIGKILLs the first worker and starts another in its place.
func (w *exactWorkers) collect(t *exactTally, n int) {
	deadline := time.After(10 * time.Minute)
	for t.done < n {
		select {
		case line := <-w.lines:
			t.read(line)
			if t.killedAt == 0 && t.done >= n/3 {
				t.killedAt = w.replaceFirst()
			}
		case <-deadline:
			log.Fatalf("exact: %d of %d jobs completed in 10 minutes", t.done, n)
		}
	}
}

// replaceFirst SIGKILLs the first worker, starts another in its place and returns when
// the first one was dead, in Unix nanoseconds.
func (w *exactWorkers) replaceFirst() int64 {
	_ = w.children[0].cmd.Process.Kill()
	_ = w.children[0].cmd.Wait()
	killedAt := time.Now().UnixNano()
	w.children = w.children[1:]
	more, err := w.start(1)
	if err != nil {
		log.Fatalf("exact: restart: %v", err)
	}
	goAll(more)
	return killedAt
}

// exactSpan is one run of a job of the exact run, from its start to its end (or to the
// kill that cut it short), in Unix nanoseconds.
type exactSpan struct{ start, end int64 }

// exactTally is what the parent of an exact run reads from its workers' lines.
type exactTally struct {
	began         map[string]map[string]int64 // key → job → start of the run under way
	runs          map[string][]exactSpan      // by key
	completed     map[string]int              // by job: runs that ran to their end
	endedInKilled map[string]bool             // jobs a run of the killed worker ran to its end
	killedPID     int
	killedAt      int64 // when the worker was killed, in Unix nanoseconds (0: not yet)
	done          int   // jobs run to their end at least once
}

// newExactTally is an empty tally of a run whose worker of pid killedPID will be killed.
func newExactTally(killedPID int) *exactTally {
	return &exactTally{began: map[string]map[string]int64{}, runs: map[string][]exactSpan{},
		completed: map[string]int{}, endedInKilled: map[string]bool{}, killedPID: killedPID}
}

// read takes a worker's line: "begin KEY ID START" or "end KEY ID START END PID".
func (t *exactTally) read(line string) {
	f := strings.Fields(line)
	switch {
	case len(f) == 4 && f[0] == "begin":
		s, _ := strconv.ParseInt(f[3], 10, 64)
		if t.began[f[1]] == nil {
			t.began[f[1]] = map[string]int64{}
		}
		t.began[f[1]][f[2]] = s
	case len(f) == 6 && f[0] == "end":
		s, _ := strconv.ParseInt(f[3], 10, 64)
		e, _ := strconv.ParseInt(f[4], 10, 64)
		delete(t.began[f[1]], f[2])
		t.runs[f[1]] = append(t.runs[f[1]], exactSpan{s, e})
		t.completed[f[2]]++
		if pid, _ := strconv.Atoi(f[5]); pid == t.killedPID {
			t.endedInKilled[f[2]] = true
		}
		if t.completed[f[2]] == 1 {
			t.done++
		}
	}
}

// cutAtKill ends at the kill the runs the kill cut short.
func (t *exactTally) cutAtKill() {
	for key, open := range t.began {
		for _, s := range open {
			if s < t.killedAt {
				t.runs[key] = append(t.runs[key], exactSpan{s, t.killedAt})
			}
		}
	}
}

// mostAtOnce is the most runs of one key at once, and how many keys had more than limit.
func (t *exactTally) mostAtOnce(limit int) (most, over int) {
	for _, rs := range t.runs {
		top := mostOverlapping(rs)
		most = max(most, top)
		if top > limit {
			over++
		}
	}
	return most, over
}

// mostOverlapping is the most of spans under way at one instant; one that ends when
// another starts is not at once with it.
func mostOverlapping(spans []exactSpan) int {
	type edge struct {
		at int64
		d  int
	}
	var edges []edge
	for _, r := range spans {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	// Ends before starts at the same instant: back to back is not at once.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.d - b.d
	})
	now, top := 0, 0
	for _, e := range edges {
		now += e.d
		top = max(top, now)
	}
	return top
}

// duplicates counts the jobs whose handler ended twice: twice, the duplicates; again,
// those whose first end was in the killed worker, which may have died before it wrote
// the outcome, so that the job had to run again (at least once, as documented).
func (t *exactTally) duplicates() (twice, again int) {
	for id, n := range t.completed {
		switch {
		case n > 1 && t.endedInKilled[id]:
			again++
		case n > 1:
			twice++
		}
	}
	return twice, again
}
