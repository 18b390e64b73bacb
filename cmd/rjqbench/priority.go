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
// bound (2 × Q × C, the jobs that can be in flight or claimed together) starts before it:
// the measure of how well the queues keep priority order.

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
	if err := b.addPriorities(db, n, shards); err != nil {
		return 0, 0, err
	}
	c := newPriorityCounter(n, work)
	qs, err := b.priorityQueues(db, queues, concurrency, noFeed)
	if err != nil {
		return 0, 0, err
	}
	defer stopAll(qs)
	start := time.Now()
	for _, q := range qs {
		if err := q.Process(c.handle); err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Minute):
		return 0, 0, fmt.Errorf("%d of %d jobs completed in 10 minutes", c.completed.Load(), n)
	}
	took := time.Since(start)
	if s := c.started.Load(); s != int64(n) {
		keep = true
		return 0, 0, fmt.Errorf("%d starts for %d jobs; run more than once: %v (database %s kept)", s, n, c.twice(), db)
	}
	return inversions(c.prios, bound), float64(n) / took.Seconds(), nil
}

// addPriorities adds to db, on a table of shards shards, n jobs of the four priorities
// in turn (priorityOrder), in calls of 1,000.
func (b bench) addPriorities(db string, n, shards int) error {
	adder, err := newQueue(b.ctx, b.addr, db, queue.Options{NoChangeFeed: true, Shards: shards})
	if err != nil {
		return err
	}
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = adder.CreateJob(i).SetPriority(priorityOrder[i%len(priorityOrder)])
	}
	for i := 0; i < n; i += 1000 {
		if _, err := adder.AddJob(b.ctx, jobs[i:min(i+1000, n)]...); err != nil {
			return fmt.Errorf("add: %w", err)
		}
	}
	_ = adder.Stop(context.Background())
	return nil
}

// priorityQueues opens the priority run's queues on db, each of its own connections.
func (b bench) priorityQueues(db string, queues, concurrency int, noFeed bool) ([]*queue.Queue, error) {
	qs := make([]*queue.Queue, queues)
	for i := range qs {
		var err error
		if qs[i], err = newQueue(b.ctx, b.addr, db, queue.Options{Concurrency: concurrency, NoChangeFeed: noFeed}); err != nil {
			return nil, err
		}
	}
	return qs, nil
}

// stopAll stops the queues qs, all at once, and waits for them.
func stopAll(qs []*queue.Queue) {
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() { _ = q.Stop(context.Background()) })
	}
	wg.Wait()
}

// priorityCounter is the priority run's handler and what it counts: the priority of each
// start in start order, and the runs of each job.
type priorityCounter struct {
	n                  int
	work               time.Duration
	prios              []job.Priority
	started, completed atomic.Int64
	runsMu             sync.Mutex
	runs               map[string]int
	done               chan struct{} // closed once n runs completed
}

// newPriorityCounter counts a run of n jobs whose handler takes work each.
func newPriorityCounter(n int, work time.Duration) *priorityCounter {
	return &priorityCounter{n: n, work: work, prios: make([]job.Priority, n), runs: make(map[string]int, n), done: make(chan struct{})}
}

// handle is the handler: it notes the start, takes c.work, and counts the completion.
func (c *priorityCounter) handle(ctx context.Context, j *job.Job) (any, error) {
	if i := c.started.Add(1) - 1; i < int64(c.n) {
		c.prios[i] = j.Priority
	}
	c.runsMu.Lock()
	c.runs[j.ID]++
	c.runsMu.Unlock()
	if c.work > 0 {
		select {
		case <-time.After(c.work):
		case <-ctx.Done():
		}
	}
	if c.completed.Add(1) == int64(c.n) {
		close(c.done)
	}
	return nil, nil
}

// twice lists the jobs that ran more than once.
func (c *priorityCounter) twice() []string {
	c.runsMu.Lock()
	defer c.runsMu.Unlock()
	var twice []string
	for id, k := range c.runs {
		if k > 1 {
			twice = append(twice, id)
		}
	}
	return twice
}
