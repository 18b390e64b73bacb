package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Measurements across processes run this program again as worker processes (-child). A
// child talks to its parent in lines: it prints "ready" once its queue is ready and waits
// for a line on stdin to start processing; then it prints what it does ("done N", the
// jobs completed so far, or "start ID UNIXNANO" when a handler starts); when stdin ends it
// stops its queue, prints "queries TOTAL CLAIMQUERIES" (counted on the wire: every query,
// and the candidate reads and claim writes among them) and exits.

// childMain runs a child: mode "process" (no changefeed unless -procs-feed, counts its
// own completions), "latency" (changefeed on, reports handler starts), "ordered" or
// "exact" (changefeed on, reports each run of a job, see ordered.go and exact.go),
// "floor" (the floor loop with batch concurrency over part of the jobs, counts
// completions) or "floor-window" (the same with its part read bounded as a worker's).
func childMain(mode, addr, db string, concurrency int, part string, childCount bool) {
	ctx := context.Background()
	if mode == "floor" || mode == "floor-window" {
		floorChild(ctx, addr, db, concurrency, part, mode == "floor-window")
		return
	}
	var c childCounter
	if childCount {
		addr = c.start(addr)
		defer c.proxy.Close()
	}
	say := sayer(os.Stdout)
	var ran runCounter
	opts := childOptions(mode, part, concurrency, &ran)
	paused := mode == "process" || mode == "ordered" || mode == "exact"
	q, err := newQueue(ctx, addr, db, opts)
	if err != nil {
		log.Fatalf("child: %v", err)
	}
	// The worker processes, and so registers in the table's workers, before the parent
	// starts measuring; in process mode paused until then, with the jobs already added.
	if paused {
		if err := q.Pause(ctx, false); err != nil {
			log.Fatalf("child: %v", err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if mode == "process" {
		var completed <-chan queue.Event
		if opts.Metrics == nil {
			completed = q.Events(ctx, queue.EventCompleted)
		}
		wg.Go(func() { tellCompletions(completed, &ran, stop, say) })
	}
	if err := q.Process(childHandler(mode, say)); err != nil {
		log.Fatalf("child: %v", err)
	}
	in := bufio.NewReader(os.Stdin)
	say("ready")
	if _, err := in.ReadString('\n'); err != nil {
		log.Fatalf("child: %v", err)
	}
	defer tellCPU(mode, self.span())
	if c.proxy != nil {
		c.proxy.Reset()
	}
	if paused {
		if err := q.Resume(ctx, false); err != nil {
			log.Fatalf("child: %v", err)
		}
	}
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	close(stop)
	wg.Wait()
	total, claimQueries := c.counts()
	_ = q.Stop(ctx)
	say("queries %d %d", total, claimQueries)
}

// childOptions are the queue options of a child in mode at concurrency: a "process"
// child follows no changefeed unless -procs-feed, -procs-local or -procs-listen asks,
// is no Queue Master when -procs-masters leaves its part out, and counts its completed
// runs in ran (as its Options.Metrics) unless it listens to completed events.
func childOptions(mode, part string, concurrency int, ran *runCounter) queue.Options {
	feed := procsFeed || procsLocal || procsListen
	opts := queue.Options{Concurrency: concurrency, NoChangeFeed: mode == "process" && !feed, LocalEventsOnly: mode == "process" && procsLocal}
	if index, _, err := childPart(part); err == nil && mode == "process" && procsMasters > 0 && index >= procsMasters {
		opts.MasterInterval = -1
	}
	if mode == "process" && !procsListen && !procsLocal {
		// Counted without a listener of completed events, which would widen the feed.
		opts.Metrics = ran
	}
	return opts
}

// childHandler is the handler of a child in mode: an ordered or exact child's says what
// it runs (see ordered.go and exact.go), a latency child's says when each job starts,
// and any other does nothing.
func childHandler(mode string, say func(string, ...any)) queue.Handler {
	switch mode {
	case "ordered":
		return orderedHandler(say)
	case "exact":
		return exactHandler(say)
	}
	return func(_ context.Context, j *job.Job) (any, error) {
		if mode == "latency" {
			say("start %s %d", j.ID, time.Now().UnixNano())
		}
		return nil, nil
	}
}

// childCounter counts a child's queries on the wire, when asked (-child-count): the
// proxy's copying takes the cores a timed run needs, and adds two hops to each of its
// messages.
type childCounter struct {
	proxy                           *wirecount.Proxy
	claimReads, claimWrites, finish *wirecount.Tally
}

// start puts the proxy in front of addr and returns the address to dial instead.
func (c *childCounter) start(addr string) string {
	var err error
	if c.proxy, err = wirecount.Start(addr); err != nil {
		log.Fatalf("child: %v", err)
	}
	c.claimReads = c.proxy.Tally(rdb.IndexClaim)
	c.claimWrites, c.finish = c.proxy.Tally(`"always"`), c.proxy.Tally(`"dateFinished"`)
	return c.proxy.Addr()
}

// counts returns all queries and the claim queries since the proxy's reset (zero when
// not counting), and prints them by kind with -kinds.
func (c *childCounter) counts() (total, claims uint64) {
	if c.proxy == nil {
		return 0, 0
	}
	total, claims = c.proxy.Queries(), c.claimReads.Count()+c.claimWrites.Count()
	if kindsWanted {
		fmt.Fprintf(os.Stderr, "child %d: %d queries (%d continues), %d reads, %d claims, %d outcome writes\n",
			os.Getpid(), total, c.proxy.Continues(), c.claimReads.Count(), c.claimWrites.Count(), c.finish.Count())
	}
	return total, claims
}

// tellCPU prints, with -kinds, the CPU this child used since its measured run began
// (its span), to the end of the run: on a machine whose cores the server shares, the
// clients' CPU counts in the rate too.
func tellCPU(mode string, span func() time.Duration) {
	if kindsWanted {
		fmt.Fprintf(os.Stderr, "child %d (%s): %s of CPU\n", os.Getpid(), mode, span().Round(time.Millisecond))
	}
}

// sayer returns a function that writes one line to w at a time, flushed, from any goroutine.
func sayer(w io.Writer) func(format string, args ...any) {
	out := bufio.NewWriter(w)
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
}

// childPart reads a child's -child-part, "index/of": which of how many children it is.
func childPart(part string) (index, of int, err error) {
	_, err = fmt.Sscanf(part, "%d/%d", &index, &of)
	return index, of, err
}

// floorChild runs the floor loop with batch k over the part ("index/of") of the jobs
// whose ids rdb.PartOf puts there, until none is left, then reports like a "process"
// child; windowed, its part reads are bounded as a worker's (see floorRounds.window).
func floorChild(ctx context.Context, addr, db string, k int, part string, windowed bool) {
	index, of, err := childPart(part)
	if err != nil {
		log.Fatalf("child: part %q: %v", part, err)
	}
	var lastChars []any
	for _, c := range "0123456789abcdef" {
		if rdb.PartOf(string(c), of) == index {
			lastChars = append(lastChars, string(c))
		}
	}
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		log.Fatalf("child: %v", err)
	}
	defer s.Close()
	window := 0
	if windowed {
		window = rdb.PartWindow(k, of)
	}
	f := newFloorRounds(db, k, lastChars, window)
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		log.Fatalf("child: %v", err)
	}
	mode := "floor"
	if windowed {
		mode = "floor-window"
	}
	defer tellCPU(mode, self.span())
	for done := 0; ; {
		won, err := f.round(ctx, s)
		if err != nil {
			log.Fatalf("child: %v", err)
		}
		if won == 0 {
			break
		}
		done += won
		fmt.Printf("done %d %d\n", done, os.Getpid())
	}
	_, _ = io.Copy(io.Discard, in)
	fmt.Println("queries 0 0")
}

// tellCompletions says "done N PID" every 20 ms while the count of completed events
// grows, until stop is closed.
func tellCompletions(completed <-chan queue.Event, ran *runCounter, stop <-chan struct{}, say func(string, ...any)) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	done, said := 0, 0
	for {
		select {
		case e := <-completed:
			if e.Local { // with a changefeed, the other processes' completions come too
				done++
			}
			continue
		case <-tick.C:
		case <-stop:
			return
		}
		if completed == nil {
			done = int(ran.completed.Load())
		}
		if done != said {
			say("done %d %d", done, os.Getpid())
			said = done
		}
	}
}

// runCounter counts a queue's completed runs as its Options.Metrics.
type runCounter struct{ completed atomic.Int64 }

func (c *runCounter) JobsClaimed(string, int) {}

func (c *runCounter) RunEnded(_ string, status job.Status, _ time.Duration) {
	if status == job.Completed {
		c.completed.Add(1)
	}
}

// child is a worker process as the parent sees it.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// lines are what the child prints while it runs; final is its closing "queries" line.
	lines chan string
	final chan string
}

// startChildren starts n children in mode and waits until every one is ready; with
// count, they count their queries.
func startChildren(n int, mode, addr, db string, concurrency int, count bool) ([]*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	children := make([]*child, 0, n)
	for i := range n {
		args := []string{"-child", mode, "-addr", addr, "-child-db", db, "-child-concurrency", strconv.Itoa(concurrency), "-child-part", fmt.Sprintf("%d/%d", i, n)}
		if kindsWanted {
			args = append(args, "-kinds")
		}
		if count {
			args = append(args, "-child-count")
		}
		if procsFeed {
			args = append(args, "-procs-feed")
		}
		if procsLocal {
			args = append(args, "-procs-local")
		}
		if procsListen {
			args = append(args, "-procs-listen")
		}
		if procsMasters > 0 {
			args = append(args, "-procs-masters", strconv.Itoa(procsMasters))
		}
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 1<<16), final: make(chan string, 1)}
		go func() {
			defer close(c.lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "queries ") {
					c.final <- line
				} else {
					c.lines <- line
				}
			}
		}()
		children = append(children, c)
	}
	for _, c := range children {
		select {
		case line, ok := <-c.lines:
			if !ok || line != "ready" {
				return children, fmt.Errorf("child did not get ready: %q", line)
			}
		case <-time.After(time.Minute):
			return children, fmt.Errorf("child did not get ready in a minute")
		}
	}
	// Workers learn of each other from the table of workers, which their heartbeats
	// write and read within the first second (see internal/processor/heartbeat.go).
	time.Sleep(1500 * time.Millisecond)
	return children, nil
}

// goAll tells every child to start.
func goAll(children []*child) {
	for _, c := range children {
		fmt.Fprintln(c.stdin, "go")
	}
}

// finish ends the children and returns the queries they sent while measured: in all,
// and those that claim (candidate reads and claim writes).
func finish(children []*child) (total, claimQueries uint64) {
	for _, c := range children {
		c.stdin.Close()
	}
	for _, c := range children {
		select {
		case line := <-c.final:
			var t, cr uint64
			if _, err := fmt.Sscanf(line, "queries %d %d", &t, &cr); err == nil {
				total += t
				claimQueries += cr
			}
		case <-time.After(time.Minute):
			log.Printf("a child did not report its queries in a minute")
			_ = c.cmd.Process.Kill()
		}
		_ = c.cmd.Wait()
	}
	return total, claimQueries
}

// merged sends every line the children print while they run on one channel.
func merged(children []*child) <-chan string {
	out := make(chan string, 1<<16)
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() {
			for line := range c.lines {
				out <- line
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	return out
}
