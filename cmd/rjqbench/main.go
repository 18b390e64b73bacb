// Command rjqbench measures the queue against a RethinkDB server: processing throughput
// (jobs/s and wire queries per job) at several concurrencies with a handler that does
// nothing, the rate of one large AddJob, and the latency from AddJob to the handler's
// start on an idle queue. With -node it measures the Node.js original (rethinkdb-job-queue
// 3.1.7) the same way, one after the other on the same server, for a side-by-side table.
//
//	go run ./cmd/rjqbench -addr 127.0.0.1:28015
//	go run ./cmd/rjqbench -addr 127.0.0.1:28015 -node   # also the original, when node and npm are on PATH
//
// Each measurement runs in a database of its own, dropped afterwards. Queries are counted
// on the wire by a proxy between the queue and the server (internal/wirecount).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	addr := flag.String("addr", envOr("RJQ_TEST_ADDR", "127.0.0.1:28015"), "RethinkDB host:port")
	levels := flag.String("concurrency", "1:1000,10:2000,50:2000", "concurrency:jobs pairs to measure processing at")
	addN := flag.Int("add", 10000, "jobs in the one AddJob whose rate is measured")
	latencyN := flag.Int("latency", 200, "jobs added one at a time to an idle queue, for add → start latency")
	node := flag.Bool("node", false, "measure the Node.js original too (needs node and npm)")
	rounds := flag.Int("rounds", 1, "times to repeat each measurement (the best is reported)")
	flag.Parse()
	ctx := context.Background()

	var nodeDir string
	if *node {
		var err error
		if nodeDir, err = installNode(); err != nil {
			log.Fatalf("node: %v", err)
		}
		defer os.RemoveAll(nodeDir)
	}

	fmt.Printf("server %s, %d round(s), best shown\n\n", *addr, *rounds)
	fmt.Println("| measurement | this library | queries/job | Node original | ratio |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, lv := range strings.Split(*levels, ",") {
		c, n := parsePair(lv)
		var best processResult
		for range *rounds {
			res, err := measureProcess(ctx, *addr, c, n)
			if err != nil {
				log.Fatalf("process c=%d: %v", c, err)
			}
			if res.jobsPerSec > best.jobsPerSec {
				best = res
			}
		}
		nodeRate := 0.0
		if nodeDir != "" {
			for range *rounds {
				rate, err := nodeProcess(nodeDir, *addr, c, n)
				if err != nil {
					log.Fatalf("node process c=%d: %v", c, err)
				}
				nodeRate = max(nodeRate, rate)
			}
		}
		row(fmt.Sprintf("process, concurrency %d (N=%d), jobs/s", c, n), best.jobsPerSec, fmt.Sprintf("%.2f", best.queriesPerJob), nodeRate)
	}

	var addRate float64
	for range *rounds {
		rate, err := measureAdd(ctx, *addr, *addN)
		if err != nil {
			log.Fatalf("add: %v", err)
		}
		addRate = max(addRate, rate)
	}
	nodeAdd := 0.0
	if nodeDir != "" {
		for range *rounds {
			rate, err := nodeAddRate(nodeDir, *addr, *addN)
			if err != nil {
				log.Fatalf("node add: %v", err)
			}
			nodeAdd = max(nodeAdd, rate)
		}
	}
	row(fmt.Sprintf("AddJob of %d jobs, jobs/s", *addN), addRate, "", nodeAdd)

	lat, err := measureLatency(ctx, *addr, *latencyN)
	if err != nil {
		log.Fatalf("latency: %v", err)
	}
	var nodeLat []time.Duration
	if nodeDir != "" {
		if nodeLat, err = nodeLatency(nodeDir, *addr, *latencyN); err != nil {
			log.Fatalf("node latency: %v", err)
		}
	}
	for _, p := range []float64{50, 99} {
		ours, theirs := pct(lat, p), pct(nodeLat, p)
		ratio := ""
		if theirs > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(theirs)/float64(ours))
		}
		fmt.Printf("| add → start p%.0f on an idle queue (N=%d) | %s | | %s | %s |\n", p, *latencyN, ms(ours), ms(theirs), ratio)
	}
}

func row(what string, ours float64, qpj string, theirs float64) {
	node, ratio := "", ""
	if theirs > 0 {
		node, ratio = fmt.Sprintf("%.0f", theirs), fmt.Sprintf("%.2f×", ours/theirs)
	}
	fmt.Printf("| %s | %.0f | %s | %s | %s |\n", what, ours, qpj, node, ratio)
}

type processResult struct {
	jobsPerSec, queriesPerJob float64
}

// session opens a session and a fresh database name, and returns a function that drops it.
func scratch(addr string) (*r.Session, string, func(), error) {
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

func newQueue(ctx context.Context, host string, port int, db string, opts queue.Options) (*queue.Queue, error) {
	opts.DatabaseInitDelay = -1
	opts.MasterInterval = -1
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &opts)
	if err != nil {
		return nil, err
	}
	return q, q.Ready(ctx)
}

func measureProcess(ctx context.Context, addr string, concurrency, n int) (processResult, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return processResult{}, err
	}
	defer drop()
	proxy, err := wirecount.Start(addr)
	if err != nil {
		return processResult{}, err
	}
	defer proxy.Close()
	q, err := newQueue(ctx, proxy.Host(), proxy.Port(), db, queue.Options{Concurrency: concurrency, NoChangeFeed: true})
	if err != nil {
		return processResult{}, err
	}
	defer q.Stop(context.Background())
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return processResult{}, err
	}
	events := q.Events(ctx, queue.EventCompleted, queue.EventError)
	proxy.Reset()
	start := time.Now()
	if err := q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		return processResult{}, err
	}
	deadline := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case e := <-events:
			if e.Type == queue.EventError {
				return processResult{}, e.Err
			}
			done++
		case <-deadline:
			return processResult{}, fmt.Errorf("%d of %d jobs done in 10 minutes", done, n)
		}
	}
	elapsed := time.Since(start)
	return processResult{jobsPerSec: float64(n) / elapsed.Seconds(), queriesPerJob: float64(proxy.Queries()) / float64(n)}, nil
}

func measureAdd(ctx context.Context, addr string, n int) (float64, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return 0, err
	}
	defer drop()
	host, port := splitAddr(addr)
	q, err := newQueue(ctx, host, port, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return 0, err
	}
	defer q.Stop(context.Background())
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(map[string]any{"n": i})
	}
	start := time.Now()
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	var count int
	cur, err := r.DB(db).Table(q.Name()).Count().Run(s)
	if err == nil {
		err = cur.One(&count)
	}
	if err != nil || count != n {
		return 0, fmt.Errorf("added %d jobs, found %d: %v", n, count, err)
	}
	return float64(n) / elapsed.Seconds(), nil
}

func measureLatency(ctx context.Context, addr string, n int) ([]time.Duration, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	host, port := splitAddr(addr)
	q, err := newQueue(ctx, host, port, db, queue.Options{})
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
	idle := q.Events(ctx, queue.EventIdle)
	out := make([]time.Duration, 0, n)
	for i := range n {
		if i > 0 {
			// Wait until the queue is idle again, the last job's outcome written: the idle
			// event that follows the last start, not one left from before it.
			select {
			case <-idle:
			case <-time.After(5 * time.Second):
			}
		}
		for len(idle) > 0 {
			<-idle
		}
		t0 := time.Now()
		if _, err := q.AddJob(ctx, q.CreateJob(nil)); err != nil {
			return nil, err
		}
		select {
		case t1 := <-started:
			out = append(out, t1.Sub(t0))
			for len(idle) > 0 {
				<-idle
			}
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("a job added to an idle queue did not start within 10 s")
		}
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

// installNode installs the original from testdata/node-interop into a temporary folder
// with its bench script, and returns the folder.
func installNode() (string, error) {
	dir, err := os.MkdirTemp("", "rjqbench-node")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"testdata/node-interop/package.json", "testdata/node-interop/package-lock.json", "cmd/rjqbench/bench.js"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("%w (run from the repository root)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	return dir, nil
}

// runNode runs bench.js in mode and decodes the JSON it prints.
func runNode(dir, addr string, out any, mode string, args ...int) error {
	host, port := splitAddr(addr)
	_, db, drop, err := scratch(addr)
	if err != nil {
		return err
	}
	defer drop()
	argv := []string{"bench.js", mode, host, strconv.Itoa(port), db}
	for _, a := range args {
		argv = append(argv, strconv.Itoa(a))
	}
	cmd := exec.Command("node", argv...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node %s: %w", mode, err)
	}
	return json.Unmarshal(b, out)
}

func nodeProcess(dir, addr string, c, n int) (float64, error) {
	var res struct {
		JobsPerSec float64 `json:"jobsPerSec"`
	}
	err := runNode(dir, addr, &res, "process", c, n)
	return res.JobsPerSec, err
}

func nodeAddRate(dir, addr string, n int) (float64, error) {
	var res struct {
		JobsPerSec float64 `json:"jobsPerSec"`
	}
	err := runNode(dir, addr, &res, "add", n)
	return res.JobsPerSec, err
}

func nodeLatency(dir, addr string, n int) ([]time.Duration, error) {
	var res struct {
		Millis []float64 `json:"millis"`
	}
	if err := runNode(dir, addr, &res, "latency", n); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(res.Millis))
	for i, m := range res.Millis {
		out[i] = time.Duration(m * float64(time.Millisecond))
	}
	return out, nil
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
