package main

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// crossResult is what jobs added by one process cost the idle worker processes that run
// them.
type crossResult struct {
	latency []time.Duration
	// claimQueriesPerJob are the workers' candidate reads and claim writes per job
	// added; queriesPerJob every query they sent, changefeed fetches included.
	claimQueriesPerJob, queriesPerJob float64
	jobsPerSec                        float64
}

// measureCross adds n jobs one at a time, 20 ms apart, from a queue of this process to a
// table that workers idle worker processes (concurrency 1, changefeed on) follow: the
// usual deployment, a web process adding and worker processes running. It reports add →
// handler start and what the workers queried per job.
func measureCross(ctx context.Context, addr string, workers, n int) (crossResult, error) {
	return timedThenCounted(func(count bool) (crossResult, error) { return crossRun(ctx, addr, workers, n, count) }, keepClaims)
}

// keepClaims keeps a counted run's queries per job.
func keepClaims(timed *crossResult, counted crossResult) {
	timed.claimQueriesPerJob, timed.queriesPerJob = counted.claimQueriesPerJob, counted.queriesPerJob
}

// crossRun is one run of measureCross; with count, the workers count their queries.
func crossRun(ctx context.Context, addr string, workers, n int, count bool) (crossResult, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return crossResult{}, err
	}
	defer drop()
	adder, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return crossResult{}, err
	}
	defer adder.Stop(context.Background())
	children, err := startChildren(workers, "latency", addr, db, 1, count)
	finished := false
	defer func() {
		if !finished {
			finish(children)
		}
	}()
	if err != nil {
		return crossResult{}, err
	}
	lines := merged(children)
	goAll(children)
	// Let the workers settle into idle: their first claim finds nothing.
	time.Sleep(500 * time.Millisecond)
	out := make([]time.Duration, 0, n)
	for range n {
		j := adder.CreateJob(nil)
		t0 := time.Now()
		if _, err := adder.AddJob(ctx, j); err != nil {
			return crossResult{}, err
		}
		t1, err := waitStart(lines, j.ID, 10*time.Second)
		if err != nil {
			return crossResult{}, err
		}
		out = append(out, t1.Sub(t0))
		time.Sleep(20 * time.Millisecond)
	}
	total, reads := finish(children)
	finished = true
	return crossResult{latency: out, claimQueriesPerJob: float64(reads) / float64(n), queriesPerJob: float64(total) / float64(n)}, nil
}

// measureBurst adds n jobs in one AddJob onto workers idle worker processes and reports
// the rate at which they are started, and the workers' queries per job.
func measureBurst(ctx context.Context, addr string, workers, n int) (crossResult, error) {
	return timedThenCounted(func(count bool) (crossResult, error) { return burstRun(ctx, addr, workers, n, count) }, keepClaims)
}

// burstRun is one run of measureBurst; with count, the workers count their queries.
func burstRun(ctx context.Context, addr string, workers, n int, count bool) (crossResult, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return crossResult{}, err
	}
	defer drop()
	adder, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return crossResult{}, err
	}
	defer adder.Stop(context.Background())
	children, err := startChildren(workers, "latency", addr, db, 1, count)
	finished := false
	defer func() {
		if !finished {
			finish(children)
		}
	}()
	if err != nil {
		return crossResult{}, err
	}
	lines := merged(children)
	goAll(children)
	time.Sleep(500 * time.Millisecond)
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = adder.CreateJob(i)
	}
	t0 := time.Now()
	if _, err := adder.AddJob(ctx, jobs...); err != nil {
		return crossResult{}, err
	}
	var last time.Time
	deadline := time.After(5 * time.Minute)
	for started := 0; started < n; {
		select {
		case line, ok := <-lines:
			if !ok {
				return crossResult{}, fmt.Errorf("the workers ended with %d of %d jobs started", started, n)
			}
			if _, at, ok := parseStart(line); ok {
				started++
				last = at
			}
		case <-deadline:
			return crossResult{}, fmt.Errorf("%d of %d jobs started in 5 minutes", started, n)
		}
	}
	total, reads := finish(children)
	finished = true
	return crossResult{
		jobsPerSec:         float64(n) / last.Sub(t0).Seconds(),
		claimQueriesPerJob: float64(reads) / float64(n),
		queriesPerJob:      float64(total) / float64(n),
	}, nil
}

// waitStart waits for the start of job id on lines.
func waitStart(lines <-chan string, id string, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return time.Time{}, fmt.Errorf("the workers ended before job %s started", id)
			}
			if got, at, ok := parseStart(line); ok && got == id {
				return at, nil
			}
		case <-deadline:
			return time.Time{}, fmt.Errorf("job %s did not start within %s", id, timeout)
		}
	}
}

// parseStart reads a child's "start ID UNIXNANO" line.
func parseStart(line string) (id string, at time.Time, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "start" {
		return "", time.Time{}, false
	}
	ns, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return f[1], time.Unix(0, ns), true
}

// crossRows measures cross-process add → start with each worker count of spec, and the
// burst onto the most workers.
func (b bench) crossRows(spec string, n, burst int) {
	most := 0
	for _, w := range strings.Split(spec, ",") {
		workers, err := strconv.Atoi(w)
		if err != nil || workers < 1 {
			log.Fatalf("-cross: want worker counts such as 1,8, got %q", spec)
		}
		most = max(most, workers)
		res, err := measureCross(b.ctx, b.addr, workers, n)
		if err != nil {
			log.Fatalf("cross %d: %v", workers, err)
		}
		for _, p := range []float64{50, 99} {
			fmt.Printf("| another queue adds, %d idle worker process(es), add → start p%.0f (N=%d) | %s | %.2f claim queries, %.2f queries in all | | | | | | | |\n",
				workers, p, n, ms(pct(res.latency, p)), res.claimQueriesPerJob, res.queriesPerJob)
		}
	}
	if b.floor {
		lat, err := crossFloor(b.ctx, b.addr, n)
		if err != nil {
			log.Fatalf("cross floor: %v", err)
		}
		for _, p := range []float64{50, 99} {
			fmt.Printf("| floor of a cross-process add → start: insert, changefeed, one claim, p%.0f (N=%d) | | | %s | | | | | | |\n", p, n, ms(pct(lat, p)))
		}
	}
	if burst > 0 {
		res, err := measureBurst(b.ctx, b.addr, most, burst)
		if err != nil {
			log.Fatalf("burst: %v", err)
		}
		fmt.Printf("| burst of %d added onto %d idle worker processes, jobs/s started | %.0f | %.2f claim queries, %.2f queries in all | | | | | | | |\n",
			burst, most, res.jobsPerSec, res.claimQueriesPerJob, res.queriesPerJob)
	}
}
