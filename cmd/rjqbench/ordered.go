package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"log"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The ordered run (-ordered K:N): K sequences (job.SetSequence) of N jobs each, added
// place by place across the keys, processed by 4 worker processes at concurrency 10, with
// one run in ten failing once (decided by the job's key and place, so every process
// agrees). Each handler prints its start and end; the parent checks, by key, that the
// runs started in add order (a failed job's retry before the next) and that no two ran
// at once, and that every job completed once.

// orderedStep is an ordered run's job.
type orderedStep struct {
	Key   string `json:"key"`
	Place int    `json:"place"`
}

// failsOnce reports whether the first run of the job at place of key fails: one in ten.
func failsOnce(key string, place int) bool {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", key, place)
	return h.Sum32()%10 == 0
}

// orderedHandler is an ordered child's handler: it says "run KEY PLACE RETRY START END OK"
// once its run ends, the times in Unix nanoseconds.
func orderedHandler(say func(string, ...any)) func(context.Context, *job.Job) (any, error) {
	return func(ctx context.Context, j *job.Job) (any, error) {
		start := time.Now()
		var s orderedStep
		if err := j.DataAs(&s); err != nil {
			return nil, err
		}
		fail := j.RetryCount == 0 && failsOnce(s.Key, s.Place)
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
		say("run %s %d %d %d %d %t", s.Key, s.Place, j.RetryCount, start.UnixNano(), time.Now().UnixNano(), !fail)
		if fail {
			return nil, fmt.Errorf("fails once")
		}
		return nil, nil
	}
}

// orderedRun is one run as the parent reads it.
type orderedRun struct {
	place      int
	start, end int64
	ok         bool
}

// orderedRows makes the ordered run and prints what it found.
func (b bench) orderedRows(spec string) {
	keys, each := parsePair(spec)
	const procs, concurrency = 4, 10
	_, db, drop, err := scratch(b.addr)
	if err != nil {
		log.Fatalf("ordered: %v", err)
	}
	defer drop()
	jobs, failing := b.addOrdered(db, keys, each)
	children, err := startChildren(procs, "ordered", b.addr, db, concurrency, false)
	if err != nil {
		finish(children)
		log.Fatalf("ordered: %v", err)
	}
	lines := merged(children)
	start := time.Now()
	goAll(children)
	runs, completed := collectOrdered(lines, jobs)
	took := time.Since(start)
	finish(children)
	outOfOrder, overlaps := orderChecks(runs)
	twice := 0
	for _, n := range completed {
		if n > 1 {
			twice++
		}
	}
	fmt.Printf("| sequences: %d keys × %d jobs over %d worker processes at C=%d, %d jobs failing once: starts out of add order, runs of a key at once, jobs completed more than once | %d, %d, %d | | | | | | | | |\n",
		keys, each, procs, concurrency, failing, outOfOrder, overlaps, twice)
	fmt.Printf("| … that run's rate, jobs/s | %.0f | | | | | | | | |\n", float64(jobs)/took.Seconds())
}

// addOrdered adds to db the ordered run's keys sequences of each jobs, place by place
// across the keys, and returns how many jobs it added and how many of them fail once.
func (b bench) addOrdered(db string, keys, each int) (added, failing int) {
	q, err := newQueue(b.ctx, b.addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		log.Fatalf("ordered: %v", err)
	}
	var jobs []*job.Job
	for place := range each {
		for k := range keys {
			key := fmt.Sprintf("key-%d", k)
			jobs = append(jobs, q.CreateJob(orderedStep{Key: key, Place: place}).SetSequence(key).SetRetryDelay(50*time.Millisecond))
			if failsOnce(key, place) {
				failing++
			}
		}
	}
	for chunk := range slices.Chunk(jobs, 1000) {
		if _, err := q.AddJob(b.ctx, chunk...); err != nil {
			log.Fatalf("ordered: add: %v", err)
		}
	}
	_ = q.Stop(context.Background())
	return len(jobs), failing
}

// collectOrdered reads the workers' "run" lines until each of the n jobs completed:
// the runs by key, and the completions by job ("KEY/PLACE").
func collectOrdered(lines <-chan string, n int) (runs map[string][]orderedRun, completed map[string]int) {
	runs, completed = map[string][]orderedRun{}, map[string]int{}
	done := 0
	deadline := time.After(10 * time.Minute)
	for done < n {
		select {
		case line, ok := <-lines:
			if !ok {
				log.Fatalf("ordered: the workers ended with %d of %d jobs completed", done, n)
			}
			f := strings.Fields(line)
			if len(f) != 7 || f[0] != "run" {
				continue
			}
			place, _ := strconv.Atoi(f[2])
			s, _ := strconv.ParseInt(f[4], 10, 64)
			e, _ := strconv.ParseInt(f[5], 10, 64)
			run := orderedRun{place: place, start: s, end: e, ok: f[6] == "true"}
			runs[f[1]] = append(runs[f[1]], run)
			if run.ok {
				id := f[1] + "/" + f[2]
				completed[id]++
				if completed[id] == 1 {
					done++
				}
			}
		case <-deadline:
			log.Fatalf("ordered: %d of %d jobs completed in 10 minutes", done, n)
		}
	}
	return runs, completed
}

// orderChecks counts, over each key's runs, the starts out of add order (a failed job's
// retry comes before the next) and the runs that began before the previous one ended.
func orderChecks(runs map[string][]orderedRun) (outOfOrder, overlaps int) {
	for _, rs := range runs {
		slices.SortFunc(rs, func(a, b orderedRun) int { return int(a.start - b.start) })
		if len(rs) > 0 && rs[0].place != 0 {
			outOfOrder++
		}
		for i := 1; i < len(rs); i++ {
			// After a run that completed its job, the next place; after one that failed,
			// the same job's retry.
			want := rs[i-1].place + 1
			if !rs[i-1].ok {
				want = rs[i-1].place
			}
			if rs[i].place != want {
				outOfOrder++
			}
			if rs[i].start < rs[i-1].end {
				overlaps++
			}
		}
	}
	return outOfOrder, overlaps
}
