package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// measureProcs processes n jobs with procs worker processes of the given concurrency each
// on one queue: the total rate, and whether claims by several processes on one index
// contend. In mode "process" the workers are the library's; in mode "floor" they run the
// floor loop with batch concurrency, each over its own part of the jobs: what the server
// allows procs clients that never contend.
func measureProcs(ctx context.Context, addr, mode string, procs, concurrency, n int, cpu cpuMeter) (result, error) {
	if mode != "process" {
		return procsRun(ctx, addr, mode, procs, concurrency, n, cpu, false)
	}
	return timedThenCounted(func(count bool) (result, error) {
		if count {
			cpu = cpuMeter{}
		}
		return procsRun(ctx, addr, mode, procs, concurrency, n, cpu, count)
	}, keepQueries)
}

// procsRun is one run of measureProcs; with count, the workers count their queries.
func procsRun(ctx context.Context, addr, mode string, procs, concurrency, n int, cpu cpuMeter, count bool) (result, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return result{}, err
	}
	defer drop()
	if err := addWithLibrary(ctx, addr, db, n); err != nil {
		return result{}, err
	}
	if err := fillFinished(ctx, addr, db, 0, procsFinished); err != nil {
		return result{}, fmt.Errorf("fill %d finished: %w", procsFinished, err)
	}
	if procsFinished > 0 {
		cpu.settleWithin(5 * time.Minute) // the fill's writes reach the disk
	}
	children, err := startChildren(procs, mode, addr, db, concurrency, count)
	finished := false
	defer func() {
		if !finished {
			finish(children)
		}
	}()
	if err != nil {
		return result{}, err
	}
	lines := merged(children)
	cpuUsed := cpu.span()
	start := time.Now()
	goAll(children)
	done := make(map[int]int) // by child, in the order lines come: summed below
	deadline := time.After(10 * time.Minute)
	sum := 0
	for sum < n {
		select {
		case line, ok := <-lines:
			if !ok {
				return result{}, fmt.Errorf("the workers ended with %d of %d jobs done", sum, n)
			}
			id, count, ok := parseDone(line)
			if !ok {
				continue
			}
			done[id] = count
			sum = 0
			for _, c := range done {
				sum += c
			}
		case <-deadline:
			return result{}, fmt.Errorf("%d of %d jobs done in 10 minutes", sum, n)
		}
	}
	elapsed := time.Since(start)
	used := cpuUsed()
	total, _ := finish(children)
	finished = true
	return result{jobsPerSec: float64(n) / elapsed.Seconds(), queriesPerJob: float64(total) / float64(n), cpu: used, jobs: n}, nil
}

// parseDone reads a child's "done N pid" line.
func parseDone(line string) (pid, count int, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "done" {
		return 0, 0, false
	}
	count, err1 := strconv.Atoi(f[1])
	pid, err2 := strconv.Atoi(f[2])
	return pid, count, err1 == nil && err2 == nil
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
