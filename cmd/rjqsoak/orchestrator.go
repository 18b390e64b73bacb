package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// orchestrator runs the soak: the server, the proxy, the producer and the workers, the
// faults, and the checks.
type orchestrator struct {
	addr, server, dir    string
	duration             time.Duration
	workers, concurrency int
	rate, fail           float64
	faultsMin, faultsMax time.Duration
	kinds                []string
	// triggers adds the writer and the trigger (see triggersoak.go), features the queue's
	// features to the trigger's jobs (features.go); writeRate and runnersDown are the
	// writer's -write-rate and -runners-down.
	triggers, features bool
	writeRate          float64
	runnersDown        time.Duration

	srv   *serverProc
	proxy *wirecount.Proxy
	db    string

	mu       sync.Mutex
	procs    map[*child]bool // the worker processes running
	children []*child        // every worker process started, in order
	started  []*child        // every process started
	faults   map[string]int
	crashes  []string
	nextID   int
	spans    []span     // when each fault lasted
	down     bool       // the workers are stopped (-runners-down): none is started
	rs       *r.Session // a session of the soak's own, not through the proxy (with triggers)
}

// child is one worker or producer process.
type child struct {
	name, ledger string
	cmd          *exec.Cmd
	killed       time.Time // when the soak SIGKILLed it (zero: never)
	exited       chan struct{}
	err          error
}

func (o *orchestrator) logf(format string, args ...any) {
	fmt.Printf("%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// run runs the soak: it starts the server (with -server) and the proxy, makes the
// queue's table (and, with triggers, the orders table), then soaks (see soak).
func (o *orchestrator) run(ctx context.Context) error {
	o.faults = map[string]int{}
	o.procs = map[*child]bool{}
	defer o.killAll()
	o.db = fmt.Sprintf("rjqsoak_%d", time.Now().Unix())
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	if o.server != "" {
		var err error
		if o.srv, err = startServer(o.server, filepath.Join(o.dir, "server")); err != nil {
			return err
		}
		defer o.srv.stop()
		o.addr = o.srv.addr
	}
	var err error
	if o.proxy, err = wirecount.Start(o.addr); err != nil {
		return err
	}
	defer o.proxy.Close()
	o.logf("soak: server %s, proxy %s, database %s, files in %s", o.addr, o.proxy.Addr(), o.db, o.dir)

	// The queue's table, made once before the processes start; the checks read through it.
	observer, err := o.observer(ctx)
	if err != nil {
		return err
	}
	defer observer.Stop(context.Background())
	if err := observer.Ready(ctx); err != nil {
		return err
	}
	if o.triggers {
		if err := o.makeOrders(ctx); err != nil {
			return err
		}
		defer o.rs.Close()
	}
	if o.features {
		if err := setGroupLimits(ctx, observer); err != nil {
			return err
		}
	}
	return o.soak(ctx, observer)
}

// soak starts the workers and the processes that feed them, makes faults for the soak's
// duration, stops the feeders, then drains, checks and reports.
func (o *orchestrator) soak(ctx context.Context, observer *queue.Queue) error {
	for range o.workers {
		if err := o.startWorker(); err != nil {
			return err
		}
	}
	if o.triggers {
		o.waitRunner(ctx, observer)
	}
	feeders, err := o.startFeeders()
	if err != nil {
		return err
	}
	started := time.Now()
	end := started.Add(o.duration)
	downDone := o.runnersDownStretch(ctx, started, end)
	o.faultLoop(ctx, end)
	<-downDone
	for _, c := range feeders {
		o.stopChild(c)
	}

	var more []summary
	if o.triggers {
		o.waitTrigger(ctx, observer)
	}
	o.logf("soak: draining")
	res, err := o.check(ctx, observer, started)
	if err != nil {
		return err
	}
	if o.triggers {
		if more, err = o.checkTriggers(ctx, &res); err != nil {
			return err
		}
	}
	o.stopWorkers()
	return o.report(res, more, started)
}

// startFeeders starts the processes that feed the queue: the producer (unless -rate is 0)
// and, with triggers, the writer.
func (o *orchestrator) startFeeders() ([]*child, error) {
	var out []*child
	if o.rate > 0 {
		c, err := o.start("producer", "producer.ledger", "-rate", strconv.FormatFloat(o.rate, 'f', -1, 64))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if o.triggers {
		c, err := o.start("writer", "writer.ledger", "-write-rate", strconv.FormatFloat(o.writeRate, 'f', -1, 64))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// stopChild tells a producer or the writer to stop (SIGTERM) and waits for it: an error,
// or no end within 3 minutes (it is then killed), is a crash.
func (o *orchestrator) stopChild(c *child) {
	o.logf("soak: stopping the %s", c.name)
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if c.err != nil {
			o.crash(c.name, c.err)
		}
	case <-time.After(3 * time.Minute):
		o.crash(c.name, fmt.Errorf("did not stop within 3 minutes"))
		c.cmd.Process.Kill()
		<-c.exited
	}
}

// report completes res with the soak's crashes, faults and time since started, prints
// it and writes it to result.txt, and fails when it found defects.
func (o *orchestrator) report(res result, more []summary, started time.Time) error {
	res.crashes = len(o.crashes)
	res.faults = o.faults
	res.took = time.Since(started)
	for _, c := range o.crashes {
		o.logf("crash: %s", c)
	}
	line := res.String()
	clean := res.clean()
	for _, m := range more {
		line += "\n" + m.String()
		clean = clean && m.clean()
	}
	fmt.Println(line)
	if err := os.WriteFile(filepath.Join(o.dir, "result.txt"), []byte(line+"\n"), 0o644); err != nil {
		return err
	}
	if !clean {
		return fmt.Errorf("the soak found defects (details above; files in %s)", o.dir)
	}
	return nil
}

// start starts a process of this binary in role, with its ledger in the soak's folder.
func (o *orchestrator) start(role, ledger string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{name: strings.TrimSuffix(ledger, ".ledger"), ledger: filepath.Join(o.dir, ledger), exited: make(chan struct{})}
	all := append([]string{"-role", role, "-addr", o.proxy.Addr(), "-db", o.db, "-ledger", c.ledger,
		"-concurrency", strconv.Itoa(o.concurrency), "-fail", strconv.FormatFloat(o.fail, 'f', -1, 64)}, args...)
	if o.triggers {
		all = append(all, "-triggers")
	}
	if o.features {
		all = append(all, "-features")
	}
	c.cmd = exec.Command(exe, all...)
	out, err := os.Create(filepath.Join(o.dir, c.name+".log"))
	if err != nil {
		return nil, err
	}
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if err := c.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		c.err = c.cmd.Wait()
		out.Close()
		close(c.exited)
	}()
	o.mu.Lock()
	o.started = append(o.started, c)
	o.mu.Unlock()
	return c, nil
}

// killAll SIGKILLs every process the soak started that still runs, and waits for them:
// a soak that ends on an error leaves none behind.
func (o *orchestrator) killAll() {
	o.mu.Lock()
	all := slices.Clone(o.started)
	o.down = true // no worker is started again
	o.mu.Unlock()
	for _, c := range all {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	}
}

// startWorker starts one more worker process and watches it: one that exits without
// being told to is a crash, and is replaced.
func (o *orchestrator) startWorker() error {
	o.mu.Lock()
	if o.down {
		o.mu.Unlock()
		return nil
	}
	o.nextID++
	n := o.nextID
	o.mu.Unlock()
	c, err := o.start("worker", fmt.Sprintf("worker-%02d.ledger", n))
	if err != nil {
		return err
	}
	o.mu.Lock()
	o.procs[c] = true
	o.children = append(o.children, c)
	o.mu.Unlock()
	go func() {
		<-c.exited
		o.mu.Lock()
		running := o.procs[c]
		delete(o.procs, c)
		o.mu.Unlock()
		if running && c.killed.IsZero() {
			o.crash(c.name, c.err)
			_ = o.startWorker()
		}
	}()
	return nil
}

func (o *orchestrator) crash(name string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.crashes = append(o.crashes, fmt.Sprintf("%s exited: %v (see %s.log)", name, err, name))
}

// faultLoop makes a fault every faultsMin..faultsMax until end, of each kind in turn (in
// a random order each round).
func (o *orchestrator) faultLoop(ctx context.Context, end time.Time) {
	var kinds []string
	for _, k := range o.kinds {
		switch {
		case k == "restart" && o.srv == nil:
		case slices.Contains([]string{"kill", "cut", "partition", "silent", "restart"}, k):
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		o.logf("soak: no faults")
		<-time.After(time.Until(end))
		return
	}
	var deck []string // the kinds still to make this round, in a random order: each comes as often
	for {
		wait := o.faultsMin + rand.N(o.faultsMax-o.faultsMin+1)
		if time.Now().Add(wait).After(end) {
			wait = time.Until(end)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if !time.Now().Before(end) {
			return
		}
		if len(deck) == 0 {
			deck = slices.Clone(kinds)
			rand.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		kind := deck[0]
		deck = deck[1:]
		from := time.Now()
		d := 2*time.Second + rand.N(6*time.Second)
		switch kind {
		case "kill":
			if !o.killWorker() {
				continue // none runs (-runners-down)
			}
		case "cut":
			o.logf("fault: every connection cut")
			o.proxy.Partition(0)
		case "partition":
			o.logf("fault: partition for %v (connections reset, new ones refused)", d.Round(time.Millisecond))
			o.proxy.Partition(d)
		case "silent":
			o.logf("fault: silent for %v (every connection stops answering; new ones too)", d.Round(time.Millisecond))
			o.proxy.Blackhole(d)
		case "restart":
			o.logf("fault: server killed and restarted")
			if err := o.srv.restart(); err != nil {
				o.logf("soak: the server did not restart: %v", err)
				return
			}
		}
		to := time.Now()
		if kind == "partition" || kind == "silent" {
			to = from.Add(d)
		}
		o.mu.Lock()
		o.faults[kind]++
		o.spans = append(o.spans, span{from, to})
		o.mu.Unlock()
	}
}

// killWorker SIGKILLs a worker and starts another; it reports whether there was one.
func (o *orchestrator) killWorker() bool {
	o.mu.Lock()
	var victim *child
	for c := range o.procs {
		victim = c
		break
	}
	if victim != nil {
		delete(o.procs, victim)
		victim.killed = time.Now()
	}
	o.mu.Unlock()
	if victim == nil {
		return false
	}
	o.logf("fault: %s (pid %d) SIGKILLed", victim.name, victim.cmd.Process.Pid)
	victim.cmd.Process.Kill()
	<-victim.exited
	if err := o.startWorker(); err != nil {
		o.logf("soak: start a worker: %v", err)
	}
	return true
}

// stopWorkers tells every worker to stop, and waits.
func (o *orchestrator) stopWorkers() {
	o.mu.Lock()
	procs := make([]*child, 0, len(o.procs))
	for c := range o.procs {
		procs = append(procs, c)
	}
	o.procs = map[*child]bool{}
	o.mu.Unlock()
	for _, c := range procs {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range procs {
		select {
		case <-c.exited:
			if c.err != nil {
				o.crash(c.name, c.err)
			}
		case <-time.After(2 * time.Minute):
			o.crash(c.name, fmt.Errorf("did not stop within 2 minutes"))
			c.cmd.Process.Kill()
		}
	}
}

// serverProc is a RethinkDB server the soak runs.
type serverProc struct {
	bin, dir, addr string
	ports          [3]int
	cmd            *exec.Cmd
	exited         chan struct{}
}

func startServer(bin, dir string) (*serverProc, error) {
	s := &serverProc{bin: bin, dir: dir}
	for i := range s.ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		s.ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports[0]))
	return s, s.start()
}

func (s *serverProc) start() error {
	s.cmd = exec.Command(s.bin, "--directory", s.dir, "--bind", "127.0.0.1", "--no-http-admin",
		"--driver-port", strconv.Itoa(s.ports[0]), "--cluster-port", strconv.Itoa(s.ports[1]),
		"--http-port", strconv.Itoa(s.ports[2]))
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Server ready") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
		return nil
	case <-s.exited:
		return fmt.Errorf("rethinkdb exited before it was ready")
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		return fmt.Errorf("rethinkdb not ready after a minute")
	}
}

// restart kills the server (SIGKILL, as a crash) and starts it again on its ports.
func (s *serverProc) restart() error {
	s.cmd.Process.Kill()
	<-s.exited
	time.Sleep(time.Second + rand.N(time.Second))
	return s.start()
}

func (s *serverProc) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
	}
}
