// Command rjqbench measures the queue against a RethinkDB server, beside the floor (the
// smallest loop that makes the same writes on the same server) and, with -node, the
// Node.js original (rethinkdb-job-queue 3.1.7), one after the other in one run:
//
//   - process: N jobs already in the queue, a handler that does nothing, jobs/s and wire
//     queries per job at each concurrency; with -floor the floor loop with batch k = the
//     concurrency; with -server-pid the server's CPU per job for each;
//
//   - procs: for each N of -procs (e.g. 1,2,4,8), N worker processes of concurrency 50 (-procs-concurrency) on one queue;
//
//   - add: one AddJob of -add jobs, and with -floor plain batched inserts of the same
//     documents;
//
//   - latency: jobs added one at a time to an idle queue that runs them (add → start);
//
//   - cross: jobs added one at a time by another queue to 1 and 8 idle worker processes
//     (-cross 1,8), and a burst of -burst jobs onto the most of them, with the workers'
//     candidate reads per job.
//
//     go run ./cmd/rjqbench -addr 127.0.0.1:28015 -floor -server-pid $(pidof rethinkdb)
//     go run ./cmd/rjqbench -addr 127.0.0.1:28015 -node   # when node and npm are on PATH
//
// Each measurement runs in a database of its own, dropped afterwards. Queries are counted
// on the wire by a proxy between the queue and the server (internal/testing/wirecount),
// in runs of their own for processing: the proxy runs in the measuring process and its
// copying takes the cores the timed run shares with the server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// result is one throughput measurement.
type result struct {
	jobsPerSec, queriesPerJob float64
	// cpu is the server's CPU time over the measured part, for jobs jobs.
	cpu  time.Duration
	jobs int
}

// flags are the command line.
type flags struct {
	addr, levels, cross, queries, scale       string
	addN, latencyN, procsN                    int
	procs, groups, ordered, exact             string
	fair                                      string
	queryParts, serverPIDs                    string
	crossN, burst, rounds, bulkN              int
	node, floor, childCount                   bool
	childMode, childDB, childPart, cpuProfile string
	childC                                    int
	workflow                                  bool
	sequences                                 int
	priority, priorityShards                  string
	priorityWork                              time.Duration
	priorityNoFeed                            bool
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.addr, "addr", envOr("RJQ_TEST_ADDR", "127.0.0.1:28015"), "RethinkDB host:port")
	flag.StringVar(&f.levels, "concurrency", "1:1000,10:2000,50:3000,200:5000", "concurrency:jobs pairs to measure processing at (empty: none)")
	flag.IntVar(&f.addN, "add", 10000, "jobs in the one AddJob whose rate is measured (0: none)")
	flag.IntVar(&f.latencyN, "latency", 200, "jobs added one at a time to an idle queue, for add → start latency (0: none)")
	flag.BoolVar(&f.node, "node", false, "measure the Node.js original too (needs node and npm)")
	flag.BoolVar(&f.floor, "floor", false, "measure the floor loop and plain inserts too")
	flag.StringVar(&f.serverPIDs, "server-pid", "", "the server's pid, to report its CPU per job (Linux /proc); a cluster's: its servers' pids, separated by commas")
	flag.StringVar(&f.procs, "procs", "", "also measure these numbers of worker processes of concurrency 50 (-procs-concurrency) on one queue, e.g. 1,2,4,8, each beside as many floor processes with -floor (empty: none)")
	flag.IntVar(&f.procsN, "procs-jobs", 5000, "jobs for -procs")
	flag.BoolVar(&procsWindow, "floor-window", false, "with -procs and -floor, also measure floor processes whose part reads are bounded as a worker's (rdb.PartWindow entries of the index, then the part)")
	flag.IntVar(&procsFinished, "procs-finished", 0, "with -procs, fill each table with this many finished jobs first (say 1000000; the library's and the floor's tables alike)")
	flag.BoolVar(&procsFeed, "procs-feed", false, "the -procs worker processes follow the changefeed, as a queue does by default (without it they follow none)")
	flag.BoolVar(&procsLocal, "procs-local", false, "the -procs worker processes follow the changefeed with Options.LocalEventsOnly, and count their completions by their completed events")
	flag.IntVar(&procsConcurrency, "procs-concurrency", 50, "the concurrency of each -procs worker process, and the batch of each floor process beside them")
	flag.IntVar(&procsMasters, "procs-masters", 0, "how many of the -procs worker processes are Queue Masters, as the README advises one or two (0: all, a queue's default)")
	flag.BoolVar(&procsListen, "procs-listen", false, "the -procs worker processes follow the changefeed and count their completions by their completed events, which makes it the whole feed")
	flag.StringVar(&f.groups, "groups", "", "also measure each -concurrency level with its jobs spread over groups of a running limit, groups:limit, e.g. 1000:5 (empty: none)")
	flag.StringVar(&f.cross, "cross", "", "idle worker process counts to measure cross-process add → start at, e.g. 1,8 (empty: none)")
	flag.IntVar(&f.crossN, "cross-jobs", 200, "jobs added one at a time for -cross")
	flag.IntVar(&f.burst, "burst", 1000, "jobs of the burst added onto the most -cross workers (0: none)")
	flag.BoolVar(&shapesWanted, "queries-shapes", false, "with -queries, also time the floor's read returning whole documents, and documents without data and log")
	flag.BoolVar(&slicesWanted, "queries-slices", false, "with -queries-parts, also try a part read through an index by the id's last character, which it makes on the table (a design's measurement)")
	flag.StringVar(&f.queryParts, "queries-parts", "", "with -queries, also compare the reads of a worker that reads its part of this many, e.g. 4,8")
	flag.StringVar(&f.queries, "queries", "", "batch sizes to compare the library's queries with the floor's at, query by query, e.g. 10,50 (empty: none)")
	flag.StringVar(&scaleDB, "scale-db", "", "a database an earlier -scale run left (see its log): top its table up and keep it")
	flag.DurationVar(&scaleRetention, "scale-retention", 0, "stop -scale's retention pass after this long (0: let it end)")
	flag.StringVar(&f.scale, "scale", "", "finished-job counts to fill a table with and measure at, e.g. 0,100000,1000000 (empty: none)")
	flag.IntVar(&f.bulkN, "bulk", 0, "finished jobs to fill a table with and remove in bulk (as rjq remove --status does) while measuring processing (0: none)")
	flag.IntVar(&f.rounds, "rounds", 1, "times to repeat each throughput measurement (the best is reported; -workflow measures in turns, once per round, and reports each round's ratios and their median)")
	flag.StringVar(&f.childMode, "child", "", "internal: run as a worker process of a cross-process measurement")
	flag.StringVar(&f.childDB, "child-db", "", "internal: the worker's database")
	flag.BoolVar(&f.childCount, "child-count", false, "internal: the worker counts its queries")
	flag.IntVar(&f.childC, "child-concurrency", 1, "internal: the worker's concurrency")
	flag.StringVar(&f.childPart, "child-part", "", "internal: the floor worker's part of the jobs, index/of")
	flag.BoolVar(&countWanted, "count", true, "count the queries per job of processing, in a run of its own through a counting proxy (the timed runs go without it)")
	flag.IntVar(&tableShards, "shards", 0, "shards of the queue tables the measurements make, but -priority's (0: one); on a cluster the server spreads them")
	flag.BoolVar(&kindsWanted, "kinds", false, "print how many jobs each read, claim and outcome write took (on stderr)")
	flag.StringVar(&f.fair, "fair", "", "backlog:jobs (e.g. 20000:100): group A holds backlog waiting jobs; a second after a worker of concurrency 50 starts, another queue adds jobs of group B: B's last start against its fair share, and the starts while B waits against before (-rounds runs) (empty: none)")
	flag.StringVar(&f.exact, "exact", "", "keys:jobs:limit (e.g. 200:20:3): groups, then job names, capped at limit, over 4 worker processes at concurrency 20, one SIGKILLed and replaced: the most running of a key at once (empty: none)")
	flag.StringVar(&f.ordered, "ordered", "", "sequences keys:jobs (e.g. 50:40) over 4 worker processes at concurrency 10 with one run in ten failing once: check add order and one run at a time per key (empty: none)")
	flag.IntVar(&f.sequences, "sequences", 0, "also measure each -concurrency level with its jobs spread over this many sequences (0: none)")
	flag.StringVar(&f.priority, "priority", "", "queues:concurrency:jobs (e.g. 4:10:2000): jobs of four priorities added first, then processed by that many queues, each shard count of -priority-shards, -rounds runs each: the starts that came more than 2 × queues × concurrency starts after a lower priority's (empty: none)")
	flag.StringVar(&f.priorityShards, "priority-shards", "1,4", "shard counts for -priority")
	flag.DurationVar(&f.priorityWork, "priority-work", 0, "how long each -priority handler takes")
	flag.BoolVar(&f.priorityNoFeed, "priority-nofeed", false, "the -priority queues follow no changefeed")
	flag.BoolVar(&f.workflow, "workflow", false, "measure workflows: a chain's hops beside add → start, a fan-out's releases beside AddJob, a fan-in's start, a tree's order")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write this process's CPU profile to the file")
	flag.Parse()
	return f
}

func main() {
	f := parseFlags()
	if f.cpuProfile != "" {
		out, err := os.Create(f.cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if f.childMode != "" {
		childMain(f.childMode, f.addr, f.childDB, f.childC, f.childPart, f.childCount)
		return
	}
	cpu := cpuMeter{pids: splitInts("server-pid", f.serverPIDs)}
	serverCPU = cpu
	b := bench{ctx: context.Background(), addr: f.addr, cpu: cpu, rounds: f.rounds, floor: f.floor}
	if f.node {
		var err error
		if b.nodeDir, err = installNode(); err != nil {
			log.Fatalf("node: %v", err)
		}
		defer os.RemoveAll(b.nodeDir)
	}
	b.run(f)
}

// run makes the measurements f asks for, in order, and prints their rows.
func (b bench) run(f flags) {
	fmt.Printf("server %s, %d round(s), best shown; ratios are this library's to the others'\n\n", f.addr, f.rounds)
	fmt.Println("| measurement | this library | queries/job | floor | ÷ floor | Node original | ÷ Node | server CPU/job: library | floor | Node |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	byLevel := map[int]levelResult{}
	if f.levels != "" {
		for _, lv := range strings.Split(f.levels, ",") {
			c, n := parsePair(lv)
			byLevel[c] = b.processRow(c, n)
		}
	}
	if f.groups != "" {
		b.groupRows(f.groups, byLevel, f.levels)
	}
	if f.fair != "" {
		backlog, jobs := parsePair(f.fair)
		b.fairRows(backlog, jobs, f.rounds)
	}
	if f.sequences > 0 {
		b.sequenceRows(f.sequences, byLevel, f.levels)
	}
	if f.ordered != "" {
		b.orderedRows(f.ordered)
	}
	if f.exact != "" {
		b.exactRows(f.exact)
	}
	if f.priority != "" {
		b.priorityRows(f.priority, f.priorityShards, f.priorityWork, f.priorityNoFeed, f.rounds)
	}
	for _, p := range splitInts("procs", f.procs) {
		b.procsRows(p, f.procsN, byLevel[procsConcurrency*p])
	}
	if f.addN > 0 {
		b.addRow(f.addN)
	}
	if f.latencyN > 0 {
		b.latencyRows(f.latencyN)
	}
	for _, k := range strings.Split(f.queries, ",") {
		if k == "" {
			continue
		}
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			log.Fatalf("-queries: want batch sizes such as 10,50, got %q", f.queries)
		}
		queryRows(b.ctx, b.addr, n, max(20, 2000/n), 1, b.cpu)
		for _, parts := range splitInts("queries-parts", f.queryParts) {
			queryRows(b.ctx, b.addr, n, max(20, 2000/n), parts, b.cpu)
		}
	}
	if f.scale != "" {
		// Built first: run from elsewhere, the dashboard step would fail only after the
		// fill (ten minutes at 10⁶ jobs).
		if _, err := rjqBinary(); err != nil {
			log.Fatalf("-scale: %v", err)
		}
		scaleRows(b.ctx, b.addr, f.scale, b.cpu)
	}
	if f.cross != "" {
		b.crossRows(f.cross, f.crossN, f.burst)
	}
	if f.bulkN > 0 {
		bulkRows(b.ctx, b.addr, f.bulkN)
	}
	if f.workflow {
		b.workflowRows()
	}
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

// bench holds what every measurement of a run shares.
type bench struct {
	ctx     context.Context
	addr    string
	cpu     cpuMeter
	rounds  int
	floor   bool
	nodeDir string
}

// best runs a throughput measurement b.rounds times and keeps the fastest.
func (b bench) best(measure func() (result, error)) result {
	var best result
	for range b.rounds {
		res, err := measure()
		if err != nil {
			log.Fatal(err)
		}
		if res.jobsPerSec > best.jobsPerSec {
			best = res
		}
	}
	return best
}

// levelResult is what processRow measured at one concurrency.
type levelResult struct{ lib, floor result }

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

func rate(v float64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// shapesWanted asks -queries to time the floor's read returning documents.
var shapesWanted bool

// slicesWanted asks -queries-parts to try the part read by the id's last character.
var slicesWanted bool

// tableShards is the number of shards of the tables the measurements make (-shards; 0:
// the server's default, one), but for -priority's, which says its own.
var tableShards int

// procsFeed makes the -procs worker processes follow the changefeed (with no listener of
// job events: the worker's feed); procsLocal, the changefeed of Options.LocalEventsOnly;
// procsListen, the whole changefeed, for a listener of completed events.
var procsFeed, procsLocal, procsListen bool

// procsWindow adds, with -procs and -floor, a floor whose part reads are bounded as a
// worker's: what the floor pays for the bound a worker's read must have.
var procsWindow bool

// procsMasters is how many of the -procs worker processes are Queue Masters (0: all).
var procsMasters int

// procsConcurrency is the concurrency of each -procs worker process, and the batch of
// each floor process beside them.
var procsConcurrency int

// procsFinished is how many finished jobs (in the Node format, as a table that has been
// in use for a month holds) each -procs table gets before its jobs are processed.
var procsFinished int

// kindsWanted asks the processing measurements to say how big their queries were.
var kindsWanted bool

// countWanted (-count) adds, to each processing measurement, a run of its own through a
// counting proxy, for the queries per job.
var countWanted bool

// serverCPU measures the server's CPU, when its pid was given; scratch waits for the
// server to settle before each measurement with it.
var serverCPU cpuMeter

// scratch opens a session and a fresh database name, and returns a function that drops it.
func scratch(addr string) (*r.Session, string, func(), error) {
	serverCPU.settle()
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		return nil, "", nil, err
	}
	db := fmt.Sprintf("rjqbench_%06x", rand.Uint32()>>8)
	return s, db, func() {
		_, _ = r.DBDrop(db).RunWrite(s)
		s.Close()
	}, nil
}

// newQueue opens a ready queue on db at addr that is no Queue Master.
func newQueue(ctx context.Context, addr, db string, opts queue.Options) (*queue.Queue, error) {
	host, port := splitAddr(addr)
	opts.DatabaseInitDelay = -1
	opts.MasterInterval = -1
	if opts.Shards == 0 {
		opts.Shards = tableShards
	}
	// The measurements count events: none may be dropped while the reader is behind.
	opts.EventBuffer = 1 << 16
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &opts)
	if err != nil {
		return nil, err
	}
	return q, q.Ready(ctx)
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
	if g.groups > 0 {
		if err := q.SetGroupLimit(ctx, "", g.limit); err != nil {
			return result{}, err
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
			return result{}, err
		}
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
	out := make([]time.Duration, 0, n)
	for range n {
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
		// As the Node.js side does (bench.js): the next job 20 ms after this one started,
		// by when its outcome is written and the queue idle again.
		time.Sleep(20 * time.Millisecond)
	}
	return out, nil
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func parsePair(s string) (int, int) {
	a, b, ok := strings.Cut(s, ":")
	c, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || c < 1 || n < 1 {
		log.Fatalf("-concurrency: want concurrency:jobs pairs such as 10:2000, got %q", s)
	}
	return c, n
}

func splitAddr(addr string) (string, int) {
	host, p, ok := strings.Cut(addr, ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		log.Fatalf("-addr: want host:port, got %q", addr)
	}
	return host, port
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// procsRows measures procs worker processes of concurrency c (-procs-concurrency) on one
// queue over n jobs (and, with -floor, procs floor loops of batch c), against one process
// at concurrency c × procs (one, when measured): the library's against the library's, the
// floor's against the floor's.
func (b bench) procsRows(procs, n int, one levelResult) {
	c := procsConcurrency
	res := b.best(func() (result, error) { return measureProcs(b.ctx, b.addr, "process", procs, c, n, b.cpu) })
	floorCells := " | |"
	var floor result
	if b.floor {
		floor = b.best(func() (result, error) { return measureProcs(b.ctx, b.addr, "floor", procs, c, n, b.cpu) })
		floorCells = fmt.Sprintf(" | %.0f | %.2f×", floor.jobsPerSec, res.jobsPerSec/floor.jobsPerSec)
	}
	feed := ""
	switch {
	case procsLocal:
		feed = ", changefeed of LocalEventsOnly"
	case procsListen:
		feed = ", whole changefeed (a listener of completed events)"
	case procsFeed:
		feed = ", changefeed on, no listener"
	}
	if procsFinished > 0 {
		feed += fmt.Sprintf(", beside %d finished", procsFinished)
	}
	fmt.Printf("| %d processes × concurrency %d (N=%d%s), jobs/s | %.0f | %.2f%s | | | %s | %s | |\n", procs, c, n, feed, res.jobsPerSec, res.queriesPerJob, floorCells, perJob(res.cpu, res.jobs), perJob(floor.cpu, floor.jobs))
	if b.floor && procsWindow {
		bounded := b.best(func() (result, error) { return measureProcs(b.ctx, b.addr, "floor-window", procs, c, n, b.cpu) })
		fmt.Printf("| … beside %d floor processes whose part reads are bounded as a worker's | | | %.0f | %.2f× | | | | %s | |\n",
			procs, bounded.jobsPerSec, res.jobsPerSec/bounded.jobsPerSec, perJob(bounded.cpu, bounded.jobs))
	}
	if one.lib.jobsPerSec > 0 {
		fmt.Printf("| … against one process at concurrency %d (floor: batch %d) | %s | | %s | | | | | | |\n",
			c*procs, c*procs, ratio(res.jobsPerSec, one.lib.jobsPerSec), ratio(floor.jobsPerSec, one.floor.jobsPerSec))
	}
}

// splitInts reads a flag's comma-separated positive numbers ("" is none), or exits
// naming the flag.
func splitInts(name, list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			log.Fatalf("-%s: want positive numbers such as 1,2,4,8, got %q", name, list)
		}
		out = append(out, n)
	}
	return out
}

// grouping spreads a processing run's jobs over groups, each with a running limit
// (Queue.SetGroupLimit's default), or over sequences (job.SetSequence); zero: none.
type grouping struct {
	groups, limit, sequences int
	// inRounds adds the jobs of sequences in one AddJob a round, each holding one job of
	// every key (events arriving over time), rather than all in one call (a bulk import,
	// whose jobs of one millisecond the claim index orders by id, not by add).
	inRounds bool
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
