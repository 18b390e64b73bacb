package main

import (
	"context"
	"fmt"
	"log"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// addRow measures one AddJob of n jobs (and plain inserts and Node's, when asked) and
// prints its row.
func (b bench) addRow(n int) {
	lib := b.best(func() (result, error) { return measureAdd(b.ctx, b.addr, n, b.cpu) })
	var fl result
	if b.floor {
		fl = b.best(func() (result, error) { return floorInsert(b.ctx, b.addr, n, b.cpu) })
	}
	var nd float64
	if b.nodeDir != "" {
		nd = b.best(func() (result, error) {
			rate, err := nodeAddRate(b.nodeDir, b.addr, n)
			return result{jobsPerSec: rate}, err
		}).jobsPerSec
	}
	fmt.Printf("| AddJob of %d jobs, jobs/s | %.0f | | %s | %s | %s | %s | %s | %s | |\n",
		n, lib.jobsPerSec, rate(fl.jobsPerSec), ratio(lib.jobsPerSec, fl.jobsPerSec), rate(nd), ratio(lib.jobsPerSec, nd),
		perJob(lib.cpu, lib.jobs), perJob(fl.cpu, fl.jobs))
}

// latencyRows measures add → start on an idle queue over n jobs (and Node's, when asked)
// and prints its p50 and p99.
func (b bench) latencyRows(n int) {
	lat, err := measureLatency(b.ctx, b.addr, n)
	if err != nil {
		log.Fatalf("latency: %v", err)
	}
	var nodeLat []time.Duration
	if b.nodeDir != "" {
		if nodeLat, err = nodeLatency(b.nodeDir, b.addr, n); err != nil {
			log.Fatalf("node latency: %v", err)
		}
	}
	for _, p := range []float64{50, 99} {
		ours, theirs := pct(lat, p), pct(nodeLat, p)
		fmt.Printf("| add → start p%.0f on an idle queue (N=%d) | %s | | | | %s | %s | | | |\n", p, n, ms(ours), ms(theirs), ratio(float64(theirs), float64(ours)))
	}
}

// measureAdd times one AddJob of n jobs and checks they are all there.
func measureAdd(ctx context.Context, addr string, n int, cpu cpuMeter) (result, error) {
	return measureAddOn(ctx, addr, n, cpu, false)
}

// measureAddOn is measureAdd on a queue that follows its changefeed when feed is set (a
// queue's default), as a queue that processes does: the server then evaluates the feed's
// filter for every document written.
func measureAddOn(ctx context.Context, addr string, n int, cpu cpuMeter, feed bool) (result, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return result{}, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: !feed})
	if err != nil {
		return result{}, err
	}
	defer q.Stop(context.Background())
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(map[string]any{"n": i})
	}
	cpuUsed := cpu.span()
	start := time.Now()
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	used := cpuUsed()
	var count int
	cur, err := r.DB(db).Table(q.Name()).Count().Run(s)
	if err == nil {
		err = cur.One(&count)
	}
	if err != nil || count != n {
		return result{}, fmt.Errorf("added %d jobs, found %d: %v", n, count, err)
	}
	return result{jobsPerSec: float64(n) / elapsed.Seconds(), cpu: used, jobs: n}, nil
}

// measureLatency adds n jobs one at a time to an idle queue (changefeed on) that runs
// them, and returns add → handler start for each.
func measureLatency(ctx context.Context, addr string, n int) ([]time.Duration, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{})
	if err != nil {
		return nil, err
	}
	defer q.Stop(context.Background())
	started := make(chan time.Time, 1)
	if err := q.Process(func(context.Context, *job.Job) (any, error) {
		started <- time.Now()
		return nil, nil
	}); err != nil {
		return nil, err
	}
	return addStarts(ctx, q, started, n)
}

// addStarts adds k jobs one at a time to the idle queue q, whose handler sends its start
// time on started, and returns add → start of each. As the Node.js side does (bench.js),
// the next job is added 20 ms after this one started, by when its outcome is written and
// the queue idle again.
func addStarts(ctx context.Context, q *queue.Queue, started <-chan time.Time, k int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, k)
	for range k {
		t0 := time.Now()
		if _, err := q.AddJob(ctx, q.CreateJob(nil)); err != nil {
			return nil, err
		}
		select {
		case t1 := <-started:
			out = append(out, t1.Sub(t0))
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("a job added to an idle queue did not start within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out, nil
}
