package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// fairResult is what one -fair run saw: group A's backlog processed at concurrency 50,
// group B's jobs added a second after the processing began.
type fairResult struct {
	before float64       // jobs/s started before B's add (A alone), from 0.2 s in
	wait   time.Duration // from B's add to the start of B's last job
	during float64       // jobs/s started while B waited (from its add to its last start)
	aShare float64       // of those, A's
	total  time.Duration // until the last job of either started
	after  float64       // jobs/s started in the 400 ms after B's add, whatever B's wait
}

// fairRows makes the fair run, the measure of how groups share a worker, rounds times:
// A holds backlog waiting jobs of group "A"; a second after a worker of concurrency 50
// starts on them, another queue adds bJobs of group "B" in one call. B's fair share is
// its jobs at half the throughput measured before its add; the target is its last start
// within twice that.
func (b bench) fairRows(backlog, bJobs, rounds int) {
	for round := range max(rounds, 1) {
		res, err := fairRun(b.ctx, b.addr, backlog, bJobs)
		if err != nil {
			log.Fatalf("-fair: %v", err)
		}
		share := time.Duration(float64(bJobs) / (res.before / 2) * float64(time.Second))
		fmt.Printf("| fair (round %d): A %d waiting, B adds %d a second in, concurrency 50: B's last start after its add | %.0f ms | | | | | | | | |\n",
			round+1, backlog, bJobs, float64(res.wait)/float64(time.Millisecond))
		fmt.Printf("| … ÷ B's fair share (%d jobs at half of %.0f jobs/s: %.0f ms; target ≤ 2×) | %s | | | | | | | | |\n",
			bJobs, res.before, float64(share)/float64(time.Millisecond), ratio(float64(res.wait), float64(share)))
		fmt.Printf("| … starts/s while B waits ÷ before (A's own: %.0f%% of them) | %s | | | | | | | | |\n",
			100*res.aShare, ratio(res.during, res.before))
		fmt.Printf("| … starts/s in the 400 ms after B's add ÷ before | %s | | | | | | | | |\n", ratio(res.after, res.before))
	}
}

// fairStart is one start of the fair run's handler: when, and whether of group B.
type fairStart struct {
	at time.Time
	b  bool
}

// fairRun makes one fair run on a fresh table.
func fairRun(ctx context.Context, addr string, backlog, bJobs int) (fairResult, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return fairResult{}, err
	}
	defer drop()
	worker, err := newQueue(ctx, addr, db, queue.Options{Concurrency: 50, NoChangeFeed: true})
	if err != nil {
		return fairResult{}, err
	}
	defer worker.Stop(context.Background())
	adder, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return fairResult{}, err
	}
	defer adder.Stop(context.Background())
	if err := addOfGroup(ctx, adder, "A", backlog); err != nil {
		return fairResult{}, err
	}
	var mu sync.Mutex
	starts := make([]fairStart, 0, backlog+bJobs)
	events := worker.Events(ctx, queue.EventCompleted, queue.EventError)
	began := time.Now()
	if err := worker.Process(func(_ context.Context, j *job.Job) (any, error) {
		mu.Lock()
		starts = append(starts, fairStart{time.Now(), j.Group() == "B"})
		mu.Unlock()
		return nil, nil
	}); err != nil {
		return fairResult{}, err
	}
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return fairResult{}, ctx.Err()
	}
	addAt := time.Now()
	if err := addOfGroup(ctx, adder, "B", bJobs); err != nil {
		return fairResult{}, err
	}
	if err := waitDone(events, backlog+bJobs); err != nil {
		return fairResult{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	return fairFigures(starts, began, addAt), nil
}

// addOfGroup adds n jobs of group through adder, in one call.
func addOfGroup(ctx context.Context, adder *queue.Queue, group string, n int) error {
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = adder.CreateJob(i).SetGroup(group)
	}
	_, err := adder.AddJob(ctx, jobs...)
	return err
}

// waitDone waits, up to 10 minutes, for n completed events, and fails at an error event.
func waitDone(events <-chan queue.Event, n int) error {
	deadline := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case e := <-events:
			if e.Type == queue.EventError {
				return e.Err
			}
			done++
		case <-deadline:
			return fmt.Errorf("%d of %d jobs done in 10 minutes", done, n)
		}
	}
	return nil
}

// fairFigures reads a fair run's figures from its starts: the processing began at
// began, B's jobs were added at addAt.
func fairFigures(starts []fairStart, began, addAt time.Time) fairResult {
	slices.SortFunc(starts, func(x, y fairStart) int { return x.at.Compare(y.at) })
	var res fairResult
	var lastB time.Time
	before := 0
	for _, s := range starts {
		if s.b {
			lastB = s.at
		}
		if s.at.After(began.Add(200*time.Millisecond)) && s.at.Before(addAt) {
			before++
		}
	}
	res.before = float64(before) / addAt.Sub(began.Add(200*time.Millisecond)).Seconds()
	res.wait = lastB.Sub(addAt)
	res.total = starts[len(starts)-1].at.Sub(began)
	during, ofA, after := 0, 0, 0
	for _, s := range starts {
		if !s.at.Before(addAt) && s.at.Before(addAt.Add(400*time.Millisecond)) {
			after++
		}
		if !s.at.Before(addAt) && !s.at.After(lastB) {
			during++
			if !s.b {
				ofA++
			}
		}
	}
	res.after = float64(after) / 0.4
	if res.wait > 0 {
		res.during = float64(during) / res.wait.Seconds()
		res.aShare = float64(ofA) / float64(during)
	}
	return res
}
