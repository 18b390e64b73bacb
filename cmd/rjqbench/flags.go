package main

import (
	"flag"
	"log"
	"os"
	"strconv"
	"strings"
	"time"
)

// flags are the command line.
type flags struct {
	addr, levels, cross, queries, scale       string
	addN, latencyN, procsN                    int
	procs, groups, ordered, exact             string
	cost                                      string
	fair                                      string
	queryParts, serverPIDs                    string
	crossN, burst, rounds, bulkN              int
	node, floor, childCount                   bool
	childMode, childDB, childPart, cpuProfile string
	childC                                    int
	workflow, trigger                         bool
	sequences                                 int
	priority, priorityShards                  string
	priorityWork                              time.Duration
	priorityNoFeed                            bool
}

// parseFlags reads the command line; the flags of the measurements' knobs set the
// package variables below.
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
	flag.StringVar(&f.cost, "cost", "", "also measure each -concurrency level with one feature set on every job, never holding it back: running (a cap of its name), rate (a rate limit of its name), grouprate (100 groups with a rate limit), deadline (a start deadline), comma-separated (empty: none)")
	flag.IntVar(&f.sequences, "sequences", 0, "also measure each -concurrency level with its jobs spread over this many sequences (0: none)")
	flag.StringVar(&f.priority, "priority", "", "queues:concurrency:jobs (e.g. 4:10:2000): jobs of four priorities added first, then processed by that many queues, each shard count of -priority-shards, -rounds runs each: the starts that came more than 2 × queues × concurrency starts after a lower priority's (empty: none)")
	flag.StringVar(&f.priorityShards, "priority-shards", "1,4", "shard counts for -priority")
	flag.DurationVar(&f.priorityWork, "priority-work", 0, "how long each -priority handler takes")
	flag.BoolVar(&f.priorityNoFeed, "priority-nofeed", false, "the -priority queues follow no changefeed")
	flag.BoolVar(&f.workflow, "workflow", false, "measure workflows: a chain's hops beside add → start, a fan-out's releases beside AddJob, a fan-in's start, a tree's order")
	flag.BoolVar(&f.trigger, "trigger", false, "measure a trigger on a table of yours: write → job start while following beside add → start, the server's CPU and queries a version, and a catch-up of -trigger-versions versions with the processing of other jobs during it")
	flag.IntVar(&triggerWrites, "trigger-writes", 500, "with -trigger, the versions written for write → start and for the cost a version (0: neither)")
	flag.DurationVar(&triggerPace, "trigger-pace", 20*time.Millisecond, "with -trigger, the time between two writes (0: as fast as one writer goes)")
	flag.IntVar(&triggerVersions, "trigger-versions", 1000000, "with -trigger, the versions written while no runner runs, then caught up (0: no catch-up)")
	flag.BoolVar(&triggerIdle, "trigger-idle", false, "with -trigger, also time a catch-up of -trigger-versions versions with no other work, in a run of its own (before the other)")
	flag.IntVar(&triggerTurns, "trigger-turns", 0, "with -trigger, the turns of plain jobs beside the catch-up (0: until it has caught up); the runner catches up the rest alone, timed apart")
	flag.IntVar(&triggerBacklog, "trigger-backlog", 5000, "with -trigger, the plain jobs of each batch processed at concurrency 50 before, during and after the catch-up")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write this process's CPU profile to the file")
	flag.Parse()
	return f
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

// parsePair reads "a:b", two positive numbers, or exits with -concurrency's message
// (whichever flag it came from).
func parsePair(s string) (int, int) {
	a, b, ok := strings.Cut(s, ":")
	c, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || c < 1 || n < 1 {
		log.Fatalf("-concurrency: want concurrency:jobs pairs such as 10:2000, got %q", s)
	}
	return c, n
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

// splitAddr reads -addr, host:port, or exits.
func splitAddr(addr string) (string, int) {
	host, p, ok := strings.Cut(addr, ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		log.Fatalf("-addr: want host:port, got %q", addr)
	}
	return host, port
}

// envOr is the environment variable key, or def when it is empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
