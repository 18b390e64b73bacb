package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuMeter reads the CPU time processes (the server, or a cluster's servers) have used,
// so that a measurement can say what each job cost the server and not only how long it
// took. No pid measures nothing.
type cpuMeter struct{ pids []int }

// self measures this process, for what the client side of a measurement costs (-kinds).
var self = cpuMeter{pids: []int{os.Getpid()}}

// used returns the processes' user and system CPU time so far, summed; zero when there is
// no pid.
func (m cpuMeter) used() time.Duration {
	var sum time.Duration
	for _, pid := range m.pids {
		sum += used(pid)
	}
	return sum
}

// used returns the process's user and system CPU time so far; zero when /proc cannot be
// read.
func used(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; the fields after its ')' are fixed.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // field 14 of the whole line
	stime, _ := strconv.ParseInt(fields[12], 10, 64) // field 15
	return time.Duration(utime+stime) * clockTick
}

// span starts measuring; the returned function gives the server CPU used since.
func (m cpuMeter) span() func() time.Duration {
	start := m.used()
	return func() time.Duration { return m.used() - start }
}

// settle waits, for up to 30 s, until the server is quiet: less than 5 % of a core over a
// quarter of a second. A dropped database is deleted in the background, and its work
// must not count against the next measurement.
func (m cpuMeter) settle() { m.settleWithin(30 * time.Second) }

// settleWithin is settle with a bound of its own: a table just filled with a million
// jobs keeps the server writing for minutes.
func (m cpuMeter) settleWithin(bound time.Duration) {
	if len(m.pids) == 0 {
		return
	}
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		used := m.span()
		time.Sleep(250 * time.Millisecond)
		if used() <= 2*clockTick {
			return
		}
	}
}

// perJob is the CPU per job, in milliseconds, or "" when nothing was measured.
func perJob(cpu time.Duration, n int) string {
	if cpu == 0 || n == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f ms", float64(cpu)/float64(time.Millisecond)/float64(n))
}
