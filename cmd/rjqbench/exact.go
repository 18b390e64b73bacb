package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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

func (b bench) exactRun(keys, each, limit int, byName bool) {
	const procs, concurrency = 4, 20
	_, db, drop, err := scratch(b.addr)
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	defer drop()
	host, port := splitAddr(b.addr)
	// The Queue Master of the run: it reviews the leases of the killed worker's jobs.
	master, err := queue.New(b.ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &queue.Options{DatabaseInitDelay: -1, NoChangeFeed: true})
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	defer master.Stop(context.Background())
	if err := master.Ready(b.ctx); err != nil {
		log.Fatalf("exact: %v", err)
	}
	var jobs []*job.Job
	for i := range each {
		for k := range keys {
			j := master.CreateJob(i)
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
			if err := master.SetLimit(b.ctx, fmt.Sprintf("name-%d", k), queue.Limit{Running: limit}); err != nil {
				log.Fatalf("exact: %v", err)
			}
		}
	} else if err := master.SetGroupLimit(b.ctx, "", limit); err != nil {
		log.Fatalf("exact: %v", err)
	}
	for chunk := range slices.Chunk(jobs, 1000) {
		if _, err := master.AddJob(b.ctx, chunk...); err != nil {
			log.Fatalf("exact: add: %v", err)
		}
	}
	children, err := startChildren(procs, "exact", b.addr, db, concurrency, false)
	if err != nil {
		finish(children)
		log.Fatalf("exact: %v", err)
	}
	lines := make(chan string, 1<<16)
	var fwd sync.WaitGroup
	forward := func(cs []*child) {
		for _, c := range cs {
			fwd.Go(func() {
				for line := range c.lines {
					lines <- line
				}
			})
		}
	}
	forward(children)
	start := time.Now()
	goAll(children)
	type run struct{ start, end int64 }
	began := map[string]map[string]int64{} // key → job → start of the run under way
	runs := map[string][]run{}
	completed := map[string]int{}
	var killedAt int64
	killedPID := children[0].cmd.Process.Pid
	endedInKilled := map[string]bool{} // jobs a run of the killed worker ran to its end
	done := 0
	deadline := time.After(10 * time.Minute)
	for done < len(jobs) {
		select {
		case line := <-lines:
			f := strings.Fields(line)
			switch {
			case len(f) == 4 && f[0] == "begin":
				s, _ := strconv.ParseInt(f[3], 10, 64)
				if began[f[1]] == nil {
					began[f[1]] = map[string]int64{}
				}
				began[f[1]][f[2]] = s
			case len(f) == 6 && f[0] == "end":
				s, _ := strconv.ParseInt(f[3], 10, 64)
				e, _ := strconv.ParseInt(f[4], 10, 64)
				delete(began[f[1]], f[2])
				runs[f[1]] = append(runs[f[1]], run{s, e})
				completed[f[2]]++
				if pid, _ := strconv.Atoi(f[5]); pid == killedPID {
					endedInKilled[f[2]] = true
				}
				if completed[f[2]] == 1 {
					done++
				}
			}
			if killedAt == 0 && done >= len(jobs)/3 {
				// SIGKILL the first worker, and start another in its place.
				_ = children[0].cmd.Process.Kill()
				_ = children[0].cmd.Wait()
				killedAt = time.Now().UnixNano()
				children = children[1:]
				more, err := startChildren(1, "exact", b.addr, db, concurrency, false)
				if err != nil {
					log.Fatalf("exact: restart: %v", err)
				}
				forward(more)
				goAll(more)
				children = append(children, more...)
			}
		case <-deadline:
			log.Fatalf("exact: %d of %d jobs completed in 10 minutes", done, len(jobs))
		}
	}
	took := time.Since(start)
	finish(children)
	// Runs the kill cut short end at the kill.
	for key, open := range began {
		for _, s := range open {
			if s < killedAt {
				runs[key] = append(runs[key], run{s, killedAt})
			}
		}
	}
	most, over := 0, 0
	for _, rs := range runs {
		type edge struct {
			at int64
			d  int
		}
		var edges []edge
		for _, r := range rs {
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
		most = max(most, top)
		if top > limit {
			over++
		}
	}
	// A job whose handler ended twice is a duplicate unless its first end was in the
	// killed worker, which may have died before it wrote the outcome: that job had to run
	// again (at least once, as documented).
	twice, again := 0, 0
	for id, n := range completed {
		switch {
		case n > 1 && endedInKilled[id]:
			again++
		case n > 1:
			twice++
		}
	}
	sum, err := master.Summary(b.ctx)
	if err != nil {
		log.Fatalf("exact: %v", err)
	}
	// Every job's log holds one completion: a job run again after the killed worker's
	// run had not completed in the table.
	completions := 0
	for chunk := range slices.Chunk(jobs, 1000) {
		ids := make([]string, len(chunk))
		for i, j := range chunk {
			ids[i] = j.ID
		}
		got, err := master.GetJob(b.ctx, ids...)
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
	kind := "groups (SetGroupLimit)"
	if byName {
		kind = "job names (Limit.Running)"
	}
	fmt.Printf("| exact: %d %s of %d jobs, limit %d, over %d worker processes at C=%d, one SIGKILLed and replaced at a third: most running of a key at once, keys over the limit, jobs run to their end twice (not counting those the killed worker ended before its outcome write), jobs not completed in the table, completions in the jobs' logs beyond one each | %d, %d, %d, %d, %d | | | | | | | | |\n",
		keys, kind, each, limit, procs, concurrency, most, over, twice, len(jobs)-sum.Completed, completions-len(jobs))
	fmt.Printf("| … jobs the killed worker ran to their end whose outcome it did not write, run again | %d | | | | | | | | |\n", again)
	fmt.Printf("| … that run's time, s (the killed worker's jobs come back when their leases end) | %.1f | | | | | | | | |\n", took.Seconds())
}
