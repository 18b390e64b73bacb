package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// grouping spreads a processing run's jobs over groups, each with a running limit
// (Queue.SetGroupLimit's default), or over sequences (job.SetSequence); zero: none.
type grouping struct {
	groups, limit, sequences int
	// inRounds adds the jobs of sequences in one AddJob a round, each holding one job of
	// every key (events arriving over time), rather than all in one call (a bulk import,
	// whose jobs of one millisecond the claim index orders by id, not by add).
	inRounds bool
	// feature is one of costFeatures, set on every job so that it never holds one back.
	feature string
}

// costFeatures says what each -cost feature sets.
var costFeatures = map[string]string{
	"running":   "a running cap of 100,000 on the jobs' name",
	"rate":      "a rate limit of 10⁹ a second on the jobs' name",
	"grouprate": "100 groups, each with a rate limit of 10⁹ a second",
	"deadline":  "a start deadline an hour ahead",
}

// costRows measures processing at each level with each feature of spec set on every job,
// beside the same level without it (from byLevel, measured in this run).
func (b bench) costRows(spec string, byLevel map[int]levelResult, levels string) {
	for _, feature := range strings.Split(spec, ",") {
		what, ok := costFeatures[feature]
		if !ok {
			log.Fatalf("-cost: no feature %q (running, rate, grouprate, deadline)", feature)
		}
		for _, lv := range strings.Split(levels, ",") {
			c, n := parsePair(lv)
			g := grouping{feature: feature}
			res := b.best(func() (result, error) { return measureProcess(b.ctx, b.addr, c, n, b.cpu, g) })
			fmt.Printf("| process, concurrency %d (N=%d), %s, jobs/s | %.0f | %.2f | | | | | %s | | |\n",
				c, n, what, res.jobsPerSec, res.queriesPerJob, perJob(res.cpu, res.jobs))
			if plain := byLevel[c].lib; plain.jobsPerSec > 0 {
				fmt.Printf("| … ÷ the same without it | %s | | | | | | | | |\n", ratio(res.jobsPerSec, plain.jobsPerSec))
			}
		}
	}
}

// setFeature sets g's feature on jobs and on q.
func setFeature(ctx context.Context, q *queue.Queue, jobs []*job.Job, g grouping) error {
	for i, j := range jobs {
		switch g.feature {
		case "running", "rate":
			j.SetName("bench")
		case "grouprate":
			j.SetGroup(strconv.Itoa(i % 100))
		case "deadline":
			j.SetDeadline(time.Now().Add(time.Hour))
		}
	}
	switch g.feature {
	case "running":
		return q.SetLimit(ctx, "bench", queue.Limit{Running: 100_000})
	case "rate":
		return q.SetLimit(ctx, "bench", queue.Limit{Starts: 1_000_000_000, Per: time.Second})
	case "grouprate":
		return q.SetGroupRate(ctx, "", 1_000_000_000, time.Second)
	}
	return nil
}

// processRow measures processing at concurrency c over n jobs (and the floor's and
// Node's, when asked) and prints its row.
func (b bench) processRow(c, n int) levelResult {
	lib := b.best(func() (result, error) { return measureProcess(b.ctx, b.addr, c, n, b.cpu, grouping{}) })
	var fl, nd result
	if b.floor {
		fl = b.best(func() (result, error) { return floorProcess(b.ctx, b.addr, c, n, b.cpu) })
	}
	if b.nodeDir != "" {
		nd = b.best(func() (result, error) { return nodeProcess(b.nodeDir, b.addr, c, n, b.cpu) })
	}
	fmt.Printf("| process, concurrency %d (N=%d), jobs/s | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %s |\n",
		c, n, lib.jobsPerSec, lib.queriesPerJob, rate(fl.jobsPerSec), ratio(lib.jobsPerSec, fl.jobsPerSec),
		rate(nd.jobsPerSec), ratio(lib.jobsPerSec, nd.jobsPerSec),
		perJob(lib.cpu, lib.jobs), perJob(fl.cpu, fl.jobs), perJob(nd.cpu, nd.jobs))
	return levelResult{lib: lib, floor: fl}
}

// groupRows measures processing at each level with the jobs spread over groups, beside
// the same level without groups (from byLevel, measured in this run).
func (b bench) groupRows(spec string, byLevel map[int]levelResult, levels string) {
	g := grouping{}
	g.groups, g.limit = parsePair(spec)
	for _, lv := range strings.Split(levels, ",") {
		c, n := parsePair(lv)
		res := b.best(func() (result, error) { return measureProcess(b.ctx, b.addr, c, n, b.cpu, g) })
		plain := byLevel[c].lib
		fmt.Printf("| process, concurrency %d (N=%d), %d groups of limit %d, jobs/s | %.0f | %.2f | | | | | %s | | |\n",
			c, n, g.groups, g.limit, res.jobsPerSec, res.queriesPerJob, perJob(res.cpu, res.jobs))
		if plain.jobsPerSec > 0 {
			fmt.Printf("| … ÷ the same without groups | %s | | | | | | | | |\n", ratio(res.jobsPerSec, plain.jobsPerSec))
		}
	}
}

// sequenceRows measures processing at each level with the jobs spread over keys
// sequences, all added in one call and then in rounds, beside the same level without
// (from byLevel, measured in this run).
func (b bench) sequenceRows(keys int, byLevel map[int]levelResult, levels string) {
	for _, lv := range strings.Split(levels, ",") {
		c, n := parsePair(lv)
		for _, inRounds := range []bool{false, true} {
			g := grouping{sequences: keys, inRounds: inRounds}
			how := "added in one call"
			if inRounds {
				how = fmt.Sprintf("added in %d calls of one job a key", n/keys)
			}
			res := b.best(func() (result, error) { return measureProcess(b.ctx, b.addr, c, n, b.cpu, g) })
			fmt.Printf("| process, concurrency %d (N=%d), %d sequences of %d jobs %s, jobs/s | %.0f | %.2f | | | | | %s | | |\n",
				c, n, keys, n/keys, how, res.jobsPerSec, res.queriesPerJob, perJob(res.cpu, res.jobs))
			if plain := byLevel[c].lib; plain.jobsPerSec > 0 {
				fmt.Printf("| … ÷ the same without sequences | %s | | | | | | | | |\n", ratio(res.jobsPerSec, plain.jobsPerSec))
			}
		}
	}
}

// measureProcess processes n jobs already in the queue at concurrency, with no changefeed
// and a handler that does nothing, counting the queue's queries on the wire.
func measureProcess(ctx context.Context, addr string, concurrency, n int, cpu cpuMeter, g grouping) (result, error) {
	return timedThenCounted(func(count bool) (result, error) {
		if !count {
			return processRun(ctx, addr, concurrency, n, cpu, nil, g)
		}
		proxy, err := wirecount.Start(addr)
		if err != nil {
			return result{}, err
		}
		defer proxy.Close()
		return processRun(ctx, proxy.Addr(), concurrency, n, cpuMeter{}, proxy, g)
	}, keepQueries)
}

// timedThenCounted runs a measurement without counting its queries, and then, unless
// -count=false, again through counting proxies, and keeps the counts of that second run
// in the first one's result. A proxy runs in the measuring process or in each worker
// process: its copying takes the cores the timed run shares with the server, and it adds
// two loopback hops to every query and changefeed message, which the floor and Node
// never pay.
func timedThenCounted[T any](run func(count bool) (T, error), keep func(timed *T, counted T)) (T, error) {
	res, err := run(false)
	if err != nil || !countWanted {
		return res, err
	}
	counted, err := run(true)
	keep(&res, counted)
	return res, err
}

// keepQueries keeps a counted run's queries per job.
func keepQueries(timed *result, counted result) { timed.queriesPerJob = counted.queriesPerJob }

// processRun processes n jobs at concurrency on a fresh table at addr; with proxy (which
// forwards addr to the server), it counts their queries instead of timing them.
func processRun(ctx context.Context, addr string, concurrency, n int, cpu cpuMeter, proxy *wirecount.Proxy, g grouping) (result, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return result{}, err
	}
	defer drop()
	q, err := newQueue(ctx, addr, db, queue.Options{Concurrency: concurrency, NoChangeFeed: true})
	if err != nil {
		return result{}, err
	}
	defer q.Stop(context.Background())
	if err := addGrouped(ctx, q, n, g); err != nil {
		return result{}, err
	}
	events := q.Events(ctx, queue.EventCompleted, queue.EventError)
	var reads, claims, finishes *wirecount.Tally
	if proxy != nil {
		reads, claims, finishes = proxy.Tally(rdb.IndexClaim), proxy.Tally(`"always"`), proxy.Tally(`"dateFinished"`)
		proxy.Reset()
	}
	cpuUsed, selfUsed := cpu.span(), self.span()
	start := time.Now()
	if err := q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		return result{}, err
	}
	deadline := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case e := <-events:
			if e.Type == queue.EventError {
				return result{}, e.Err
			}
			done++
		case <-deadline:
			s, err := q.Summary(ctx)
			return result{}, fmt.Errorf("%d of %d jobs done in 10 minutes (%d events dropped; %+v %v)", done, n, q.DroppedEvents(), s, err)
		}
	}
	elapsed := time.Since(start)
	res := result{jobsPerSec: float64(n) / elapsed.Seconds(), cpu: cpuUsed(), jobs: n}
	if kindsWanted && proxy == nil {
		fmt.Fprintf(os.Stderr, "c=%d: this process's CPU per job %s\n", concurrency, perJob(selfUsed(), n))
	}
	if proxy != nil {
		res.queriesPerJob = float64(proxy.Queries()) / float64(n)
		if kindsWanted {
			fmt.Fprintf(os.Stderr, "c=%d: jobs per read %.1f, per claim %.1f, per outcome write %.1f\n", concurrency,
				float64(n)/float64(reads.Count()), float64(n)/float64(claims.Count()), float64(n)/float64(finishes.Count()))
		}
	}
	return res, nil
}

// addGrouped adds n jobs to q, spread over g's groups (whose running limit it sets) or
// sequences: in one AddJob, or with g.inRounds in one a round of one job a sequence.
func addGrouped(ctx context.Context, q *queue.Queue, n int, g grouping) error {
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
		if g.groups > 0 {
			jobs[i].SetGroup(strconv.Itoa(i % g.groups))
		}
		if g.sequences > 0 {
			jobs[i].SetSequence(strconv.Itoa(i % g.sequences))
		}
	}
	if err := setFeature(ctx, q, jobs, g); err != nil {
		return err
	}
	if g.groups > 0 {
		if err := q.SetGroupLimit(ctx, "", g.limit); err != nil {
			return err
		}
	}
	calls := [][]*job.Job{jobs}
	if g.sequences > 0 && g.inRounds {
		calls = nil
		for i := 0; i < len(jobs); i += g.sequences {
			calls = append(calls, jobs[i:min(i+g.sequences, len(jobs))])
		}
	}
	for _, call := range calls {
		if _, err := q.AddJob(ctx, call...); err != nil {
			return err
		}
	}
	return nil
}
