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
//     candidate reads per job;
//
//   - trigger: a trigger on a table of the user's, write → job start beside add → start,
//     its server CPU and queries a version, and its catch-up of -trigger-versions versions.
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
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// main runs as a worker process with -child, else makes the measurements the flags ask
// for.
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

// bench holds what every measurement of a run shares.
type bench struct {
	ctx     context.Context
	addr    string
	cpu     cpuMeter
	rounds  int
	floor   bool
	nodeDir string
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
	if f.cost != "" {
		b.costRows(f.cost, byLevel, f.levels)
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
	b.queriesRows(f.queries, f.queryParts)
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
	if f.trigger {
		b.triggerRows()
	}
}

// queriesRows compares the library's queries with the floor's at each batch size of
// sizes (-queries), by a whole worker and by a worker that reads its part of each count
// of parts (-queries-parts).
func (b bench) queriesRows(sizes, parts string) {
	for _, k := range strings.Split(sizes, ",") {
		if k == "" {
			continue
		}
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			log.Fatalf("-queries: want batch sizes such as 10,50, got %q", sizes)
		}
		queryRows(b.ctx, b.addr, n, max(20, 2000/n), 1, b.cpu)
		for _, of := range splitInts("queries-parts", parts) {
			queryRows(b.ctx, b.addr, n, max(20, 2000/n), of, b.cpu)
		}
	}
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

// result is one throughput measurement.
type result struct {
	jobsPerSec, queriesPerJob float64
	// cpu is the server's CPU time over the measured part, for jobs jobs.
	cpu  time.Duration
	jobs int
}

// levelResult is what processRow measured at one concurrency.
type levelResult struct{ lib, floor result }
