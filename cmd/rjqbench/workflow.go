package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// workflowRows measures workflows (job.SetDependsOn), each figure beside the queue's own
// in the same run:
//   - a chain of 200 jobs at concurrency 1: each hop, from a parent's completion (its
//     dateFinished) to its child's start (its handler), beside add → start on an idle
//     queue, in turns, once per round (-rounds), each round's ratio printed;
//   - one parent with 10,000 children: the children released after the parent completed,
//     beside one AddJob of 10,000 jobs (on a queue without a changefeed, as the -add row,
//     and on one that follows it, as the fan-out's queue; and the fan-out again on a queue
//     without a changefeed, beside the former), and beside plain status updates of as many
//     blocked children (fanOutFloor), in turns, once per round, each round's ratio
//     printed and their median taken;
//   - one child of 1,000 parents, 10 times: from the last parent's completion to the
//     child's start;
//   - a 5-level tree of 1,000 jobs and a diamond over 4 worker processes at concurrency
//     10: no job starts before its parents completed, each runs once.
func (b bench) workflowRows() {
	// The hop and the fan-out are measured in turns with what they are compared to, once
	// per round: a ratio is taken within a round, so that this machine's swings (its disk
	// makes every query twice as slow at times) move both sides of it.
	var w workflowFigures
	for range max(b.rounds, 1) {
		b.workflowRound(&w)
	}
	w.print()
	var fanIn []time.Duration
	for range 10 {
		d, err := measureFanIn(b.ctx, b.addr, 1000)
		if err != nil {
			log.Fatalf("fan-in: %v", err)
		}
		fanIn = append(fanIn, d)
	}
	fmt.Printf("| workflow: 1 child of 1,000 parents, last parent completed → child started, p50 of 10 (max) | %s (%s) | | | | | | | | |\n",
		ms(pct(fanIn, 50)), ms(slices.Max(fanIn)))
	early, runs, err := measureTree(b.ctx, b.addr, 1000, 5, 4)
	if err != nil {
		log.Fatalf("tree: %v", err)
	}
	fmt.Printf("| workflow: 5-level tree of 1,000 jobs and a diamond over 4 worker processes at C=10: jobs started before a parent completed, jobs not run exactly once | %d, %d | | | | | | | | |\n", early, runs)
}

// workflowFigures are the chain's and the fan-out's figures of every round of
// workflowRows, and each round's ratios.
type workflowFigures struct {
	lat, hops                                     []time.Duration
	hopRatios, addRatios, feedRatios, floorRatios []float64
	rels, adds, feedAdds, floors                  []float64
	quiets, quietRatios                           []float64
}

// workflowRound measures, once each, the chain beside add → start, and the fan-out
// (with and without a changefeed) beside AddJob (with and without one) and beside plain
// status updates, and adds the figures to w.
func (b bench) workflowRound(w *workflowFigures) {
	l, err := measureLatency(b.ctx, b.addr, 200)
	if err != nil {
		log.Fatalf("latency: %v", err)
	}
	h, err := measureChain(b.ctx, b.addr, 200)
	if err != nil {
		log.Fatalf("chain: %v", err)
	}
	w.lat, w.hops = append(w.lat, l...), append(w.hops, h...)
	w.hopRatios = append(w.hopRatios, float64(pct(h, 50))/float64(pct(l, 50)))
	add, err := measureAdd(b.ctx, b.addr, 10000, b.cpu)
	if err != nil {
		log.Fatalf("AddJob: %v", err)
	}
	feedAdd, err := measureAddOn(b.ctx, b.addr, 10000, b.cpu, true)
	if err != nil {
		log.Fatalf("AddJob with a changefeed: %v", err)
	}
	rel, err := measureFanOut(b.ctx, b.addr, 10000, true)
	if err != nil {
		log.Fatalf("fan-out: %v", err)
	}
	quiet, err := measureFanOut(b.ctx, b.addr, 10000, false)
	if err != nil {
		log.Fatalf("fan-out without a changefeed: %v", err)
	}
	w.quietRatios = append(w.quietRatios, quiet/add.jobsPerSec)
	w.quiets = append(w.quiets, quiet)
	floor, err := fanOutFloor(b.ctx, b.addr, 10000)
	if err != nil {
		log.Fatalf("fan-out floor: %v", err)
	}
	w.rels, w.adds, w.feedAdds, w.floors = append(w.rels, rel), append(w.adds, add.jobsPerSec), append(w.feedAdds, feedAdd.jobsPerSec), append(w.floors, floor)
	w.addRatios, w.feedRatios, w.floorRatios = append(w.addRatios, rel/add.jobsPerSec), append(w.feedRatios, rel/feedAdd.jobsPerSec), append(w.floorRatios, rel/floor)
}

// print prints the chain's rows and the fan-out's: medians over the rounds, and each
// round's ratios.
func (w *workflowFigures) print() {
	for _, p := range []float64{50, 99} {
		fmt.Printf("| workflow: chain of 200 at C=1, hop (parent completed → child started) p%.0f | %s | | add → start on an idle queue p%.0f: %s | %s | | | | | |\n",
			p, ms(pct(w.hops, p)), p, ms(pct(w.lat, p)), ratio(float64(pct(w.hops, p)), float64(pct(w.lat, p))))
	}
	fmt.Printf("| workflow: hop p50 ÷ add → start p50, each round | %s | | | median %s | | | | | |\n", ratios(w.hopRatios), ratio(median(w.hopRatios), 1))
	// Each comparison of the fan-out: its medians, then each round's ratio.
	compare := func(what string, lib, other, rounds []float64, each string) {
		fmt.Printf("| workflow: %s | %.0f | | %.0f | %s | | | | | |\n", what, median(lib), median(other), ratio(median(rounds), 1))
		if each != "" {
			fmt.Printf("| workflow: %s, each round | %s | | | median %s | | | | | |\n", each, ratios(rounds), ratio(median(rounds), 1))
		}
	}
	compare("1 parent, 10,000 children released, jobs/s (median of rounds), beside AddJob of 10,000", w.rels, w.adds, w.addRatios, "released ÷ AddJob")
	compare("the same, beside AddJob of 10,000 on a queue that follows its changefeed, as the fan-out's does, jobs/s", w.rels, w.feedAdds, w.feedRatios, "released ÷ AddJob with a changefeed")
	compare("the fan-out on a queue without a changefeed, beside AddJob without one, jobs/s", w.quiets, w.adds, w.quietRatios, "released without a changefeed ÷ AddJob without one")
	compare("the same, beside plain status updates of the 10,000 children, jobs/s", w.rels, w.floors, w.floorRatios, "")
}

// median is the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratios prints ratios as "1.72×, 1.80×".
func ratios(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = ratio(x, 1)
	}
	return strings.Join(out, ", ")
}

// stamps records, inside handlers, when each job started, by id.
type stamps struct {
	mu      sync.Mutex
	started map[string]time.Time
	runs    map[string]int
	done    chan string
}

func newStamps(n int) *stamps {
	return &stamps{started: make(map[string]time.Time, n), runs: make(map[string]int, n), done: make(chan string, n)}
}

func (s *stamps) process(q *queue.Queue) error {
	return q.Process(func(_ context.Context, j *job.Job) (any, error) {
		s.mu.Lock()
		s.started[j.ID] = time.Now()
		s.runs[j.ID]++
		s.mu.Unlock()
		return "r", nil
	})
}

// waitCompleted waits for the completed events of ids.
func waitCompleted(ctx context.Context, events <-chan queue.Event, ids []string, within time.Duration) error {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	deadline := time.After(within)
	for len(want) > 0 {
		select {
		case e := <-events:
			if e.Type == queue.EventCompleted {
				delete(want, e.JobID)
			}
		case <-deadline:
			return fmt.Errorf("%d jobs did not complete within %s", len(want), within)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// finished reads the jobs ids and returns each one's dateFinished and dateEnable.
func finished(ctx context.Context, q *queue.Queue, ids []string) (map[string]*job.Job, error) {
	out := make(map[string]*job.Job, len(ids))
	for chunk := range slices.Chunk(ids, 1000) {
		jobs, err := q.GetJob(ctx, chunk...)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			out[j.ID] = j
		}
	}
	return out, nil
}

func measureChain(ctx context.Context, addr string, n int) ([]time.Duration, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{Concurrency: 1})
	if err != nil {
		return nil, err
	}
	defer q.Stop(context.Background())
	jobs := make([]*job.Job, n)
	ids := make([]string, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
		if i > 0 {
			jobs[i].SetDependsOn(jobs[i-1].ID)
		}
		ids[i] = jobs[i].ID
	}
	events := q.Events(ctx, queue.EventCompleted)
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return nil, err
	}
	st := newStamps(n)
	if err := st.process(q); err != nil {
		return nil, err
	}
	if err := waitCompleted(ctx, events, ids, 5*time.Minute); err != nil {
		return nil, err
	}
	docs, err := finished(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	hops := make([]time.Duration, 0, n-1)
	for i := 1; i < n; i++ {
		hops = append(hops, st.started[ids[i]].Sub(docs[ids[i-1]].DateFinished))
	}
	return hops, nil
}

// measureFanOut times the release of n children of one parent that runs on a queue that
// follows its changefeed, or not (feed): the queue that completes a parent releases its
// children either way.
func measureFanOut(ctx context.Context, addr string, n int, feed bool) (float64, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return 0, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{Concurrency: 1, NoChangeFeed: !feed})
	if err != nil {
		return 0, err
	}
	defer func() {
		// The child holding the slot waits for its context: Stop cancels it at once.
		stop, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		q.Stop(stop)
	}()
	parent := q.CreateJob("parent")
	jobs := []*job.Job{parent}
	for i := range n {
		jobs = append(jobs, q.CreateJob(i).SetDependsOn(parent.ID))
	}
	for chunk := range slices.Chunk(jobs, 1000) {
		if _, err := q.AddJob(ctx, chunk...); err != nil {
			return 0, err
		}
	}
	events := q.Events(ctx, queue.EventReleased)
	// The parent runs; the first child released then holds the queue's one slot until
	// the end, so that the releases are timed alone, as AddJob is.
	if err := q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.ID != parent.ID {
			<-ctx.Done()
		}
		return nil, nil
	}); err != nil {
		return 0, err
	}
	released := 0
	var last time.Time
	deadline := time.After(5 * time.Minute)
	for released < n {
		select {
		case e := <-events:
			if e.Type == queue.EventReleased {
				released++
				last = time.Now()
			}
		case <-deadline:
			return 0, fmt.Errorf("%d of %d children released in 5 minutes", released, n)
		}
	}
	docs, err := finished(ctx, q, []string{parent.ID})
	if err != nil {
		return 0, err
	}
	// From the parent's completion (its dateFinished) to the last released event.
	took := last.Sub(docs[parent.ID].DateFinished)
	return float64(n) / took.Seconds(), nil
}

// fanOutFloor adds a parent and n children, blocked, and times the least a release can
// write: each child's status set to waiting, in updates of 1,000 children, two at a time
// (as the library writes them), without the parent's run or any check.
func fanOutFloor(ctx context.Context, addr string, n int) (float64, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return 0, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return 0, err
	}
	defer q.Stop(context.Background())
	parent := q.CreateJob("parent")
	jobs := []*job.Job{parent}
	var ids []any
	for i := range n {
		c := q.CreateJob(i).SetDependsOn(parent.ID)
		jobs = append(jobs, c)
		ids = append(ids, c.ID)
	}
	for chunk := range slices.Chunk(jobs, 1000) {
		if _, err := q.AddJob(ctx, chunk...); err != nil {
			return 0, err
		}
	}
	table := r.DB(db).Table(q.Name())
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n/1000+1)
	slots := make(chan struct{}, 2)
	for chunk := range slices.Chunk(ids, 1000) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			res, err := writeOne(ctx, s, table.GetAll(chunk...).Update(map[string]any{"status": "waiting"}))
			if err == nil && res.Replaced != len(chunk) {
				err = fmt.Errorf("%d of %d updated", res.Replaced, len(chunk))
			}
			errs <- err
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / took.Seconds(), nil
}

func measureFanIn(ctx context.Context, addr string, n int) (time.Duration, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return 0, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{Concurrency: 50})
	if err != nil {
		return 0, err
	}
	defer q.Stop(context.Background())
	var parents []*job.Job
	var ids []string
	for i := range n {
		p := q.CreateJob(i)
		parents = append(parents, p)
		ids = append(ids, p.ID)
	}
	child := q.CreateJob("child").SetDependsOn(ids...)
	if _, err := q.AddJob(ctx, append(parents, child)...); err != nil {
		return 0, err
	}
	events := q.Events(ctx, queue.EventCompleted)
	st := newStamps(n + 1)
	if err := st.process(q); err != nil {
		return 0, err
	}
	if err := waitCompleted(ctx, events, append(ids, child.ID), 5*time.Minute); err != nil {
		return 0, err
	}

	docs, err := finished(ctx, q, ids)
	if err != nil {
		return 0, err
	}
	var last time.Time
	for _, d := range docs {
		if d.DateFinished.After(last) {
			last = d.DateFinished
		}
	}
	return st.started[child.ID].Sub(last), nil
}

// measureTree runs a tree of n jobs, levels deep, each job of a level a child of one of
// the level above, over procs queues at concurrency 10, and returns the jobs that
// started before a parent completed and the jobs that did not run exactly once.
func measureTree(ctx context.Context, addr string, n, levels, procs int) (early, notOnce int, err error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return 0, 0, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer q.Stop(context.Background())
	jobs := treeJobs(q, n, levels)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	children, err := startChildren(procs, "latency", addr, db, 10, false)
	defer finish(children)
	if err != nil {
		return 0, 0, err
	}
	lines := merged(children)
	goAll(children)
	events := q.Events(ctx, queue.EventCompleted)
	// The leaves first: the order within the call does not matter.
	slices.Reverse(jobs)
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return 0, 0, err
	}
	if err := waitCompleted(ctx, events, ids, 5*time.Minute); err != nil {
		return 0, 0, err
	}
	docs, err := finished(ctx, q, ids)
	if err != nil {
		return 0, 0, err
	}
	started, runs := readStarts(lines, len(jobs))
	for _, j := range jobs {
		if runs[j.ID] != 1 || docs[j.ID].ProcessCount != 1 {
			notOnce++
		}
		for _, p := range j.DependsOn() {
			if started[j.ID].Before(docs[p].DateFinished) {
				early++
				break
			}
		}
	}
	return early, notOnce, nil
}

// treeJobs creates the jobs of measureTree: n jobs over levels levels, each job below
// the first a child of two of the level above, and a diamond (A → B, A → C, B + C → D),
// in that order.
func treeJobs(q *queue.Queue, n, levels int) []*job.Job {
	var jobs []*job.Job
	var byLevel [][]*job.Job
	per := n / levels
	for l := range levels {
		var level []*job.Job
		for i := range per {
			j := q.CreateJob(fmt.Sprintf("%d/%d", l, i))
			if l > 0 {
				above := byLevel[l-1]
				j.SetDependsOn(above[i%len(above)].ID, above[(i*7+3)%len(above)].ID)
			}
			level = append(level, j)
		}
		byLevel = append(byLevel, level)
		jobs = append(jobs, level...)
	}
	// And a diamond: A → B, A → C, B + C → D.
	a := q.CreateJob("A")
	b, c := q.CreateJob("B").SetDependsOn(a.ID), q.CreateJob("C").SetDependsOn(a.ID)
	return append(jobs, a, b, c, q.CreateJob("D").SetDependsOn(b.ID, c.ID))
}

// readStarts reads, for 500 ms, the starts the workers report ("start ID UNIXNANO"):
// each job's start, by id, and how many times it started. It is called once every job
// completed: a handler starts before its outcome is written, so all are in but the lines
// still in flight, which the 500 ms leave time for. size is the jobs expected.
func readStarts(lines <-chan string, size int) (started map[string]time.Time, runs map[string]int) {
	started = make(map[string]time.Time, size)
	runs = make(map[string]int, size)
	quiet := time.After(500 * time.Millisecond)
	for {
		select {
		case line := <-lines:
			var id string
			var at int64
			if _, err := fmt.Sscanf(line, "start %s %d", &id, &at); err == nil {
				runs[id]++
				started[id] = time.Unix(0, at)
			}
		case <-quiet:
			return started, runs
		}
	}
}
