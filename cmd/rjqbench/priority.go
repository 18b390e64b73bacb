package main

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The priority run (-priority Q:C:N): N jobs of four priorities (Low, Normal, High,
// Highest, in turn) are added first, then Q queues of concurrency C (each with its own
// connections, as worker processes have) process them, on a table of each shard count of
// -priority-shards. The handlers count their starts, in one process, so the order is
// exact. A start is an inversion when a job of lower priority started more than the
// bound (2 × Q × C, the jobs that can be in flight or claimed together) starts before it
// (issue 35's measure).

// priorityOrder is the order jobs are added in.
var priorityOrder = []job.Priority{job.Low, job.Normal, job.High, job.Highest}

// inversions counts the starts of prios (priorities in start order) that come more than
// bound starts after a start of a lower priority.
func inversions(prios []job.Priority, bound int) int {
	n := 0
	worst := job.Priority(0) // the lowest priority (highest number) started so far, up to i-bound-1
	for i, p := range prios {
		if j := i - bound - 1; j >= 0 && prios[j] > worst {
			worst = prios[j]
		}
		if worst > p {
			n++
		}
	}
	return n
}

// priorityRows makes the priority runs and prints what they found.
func (b bench) priorityRows(spec, shardList string, work time.Duration, noFeed bool, runs int) {
	f := strings.Split(spec, ":")
	if len(f) != 3 {
		log.Fatalf("-priority: want queues:concurrency:jobs, such as 4:10:2000, got %q", spec)
	}
	var v [3]int
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			log.Fatalf("-priority: want queues:concurrency:jobs, such as 4:10:2000, got %q", spec)
		}
		v[i] = n
	}
	queues, concurrency, n := v[0], v[1], v[2]
	bound := 2 * queues * concurrency
	for _, shards := range splitInts("priority-shards", shardList) {
		var counts []string
		var rates []string
		for range runs {
			inv, rate, err := b.priorityRun(queues, concurrency, n, shards, bound, work, noFeed)
			if err != nil {
				log.Fatalf("priority: %v", err)
			}
			counts = append(counts, strconv.Itoa(inv))
			rates = append(rates, fmt.Sprintf("%.0f", rate))
		}
		feed := "with changefeeds"
		if noFeed {
			feed = "without changefeeds"
		}
		fmt.Printf("| priority order: %d jobs of 4 priorities, %d queues at C=%d %s, %d shard(s), handler %v: starts beyond %d after a lower priority's, each run | %s | | | | | | | | |\n",
			n, queues, concurrency, feed, shards, work, bound, strings.Join(counts, ", "))
		fmt.Printf("| … those runs' rates, jobs/s | %s | | | | | | | | |\n", strings.Join(rates, ", "))
	}
}

// priorityRun is one priority run: the inversions beyond bound, and the rate.
func (b bench) priorityRun(queues, concurrency, n, shards, bound int, work time.Duration, noFeed bool) (int, float64, error) {
	_, db, drop, err := scratch(b.addr)
	if err != nil {
		return 0, 0, err
	}
	keep := false
	defer func() {
		if !keep {
			drop()
		}
	}()
	adder, err := newQueue(b.ctx, b.addr, db, queue.Options{NoChangeFeed: true, Shards: shards})
	if err != nil {
		return 0, 0, err
	}
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = adder.CreateJob(i).SetPriority(priorityOrder[i%len(priorityOrder)])
	}
	for i := 0; i < n; i += 1000 {
		if _, err := adder.AddJob(b.ctx, jobs[i:min(i+1000, n)]...); err != nil {
			return 0, 0, fmt.Errorf("add: %w", err)
		}
	}
	_ = adder.Stop(context.Background())

	prios := make([]job.Priority, n)
	var started, completed atomic.Int64
	var runsMu sync.Mutex
	runs := make(map[string]int, n)
	done := make(chan struct{})
	handler := func(ctx context.Context, j *job.Job) (any, error) {
		if i := started.Add(1) - 1; i < int64(n) {
			prios[i] = j.Priority
		}
		runsMu.Lock()
		runs[j.ID]++
		runsMu.Unlock()
		if work > 0 {
			select {
			case <-time.After(work):
			case <-ctx.Done():
			}
		}
		if completed.Add(1) == int64(n) {
			close(done)
		}
		return nil, nil
	}
	qs := make([]*queue.Queue, queues)
	for i := range qs {
		if qs[i], err = newQueue(b.ctx, b.addr, db, queue.Options{Concurrency: concurrency, NoChangeFeed: noFeed}); err != nil {
			return 0, 0, err
		}
	}
	defer func() {
		var wg sync.WaitGroup
		for _, q := range qs {
			wg.Go(func() { _ = q.Stop(context.Background()) })
		}
		wg.Wait()
	}()
	start := time.Now()
	for _, q := range qs {
		if err := q.Process(handler); err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return 0, 0, fmt.Errorf("%d of %d jobs completed in 10 minutes", completed.Load(), n)
	}
	took := time.Since(start)
	if s := started.Load(); s != int64(n) {
		runsMu.Lock()
		var twice []string
		for id, k := range runs {
			if k > 1 {
				twice = append(twice, id)
			}
		}
		runsMu.Unlock()
		keep = true
		return 0, 0, fmt.Errorf("%d starts for %d jobs; run more than once: %v (database %s kept)", s, n, twice, db)
	}
	return inversions(prios, bound), float64(n) / took.Seconds(), nil
}
