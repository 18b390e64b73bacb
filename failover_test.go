package rjq_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The failover test starts a cluster of three RethinkDB servers of its own, from the
// binary named by RJQ_TEST_RETHINKDB, and in each run kills (SIGKILL) the server holding
// a primary replica of a queue's table while two worker queues process 3,000 jobs on it,
// then checks that every job completed, and that each handler ran once. The table has
// three shards and three replicas; writes are acknowledged by a majority. It starts the
// killed server again between runs. RJQ_TEST_FAILOVER_RUNS sets the number of runs
// (default 3).
func TestFailoverOfAPrimaryLosesNoJob(t *testing.T) {
	bin := os.Getenv("RJQ_TEST_RETHINKDB")
	if bin == "" {
		t.Skip("RJQ_TEST_RETHINKDB is not set: name a rethinkdb 2.4 binary there to run failovers on a cluster of three")
	}
	if raceDetector {
		// Not this library's race: when the primary dies, the driver redials, and reads and
		// writes a pool slot without a lock when two queries do so at once (pool.go:122/127,
		// rethinkdb/rethinkdb-go#488, open; v6.2.1 is the newest release). The race detector
		// stops the test there; run it without -race.
		t.Skip("rethinkdb-go v6.2.1 has a known data race when it redials (rethinkdb/rethinkdb-go#488); run without -race")
	}
	runs := 3
	if v := os.Getenv("RJQ_TEST_FAILOVER_RUNS"); v != "" {
		var err error
		runs, err = strconv.Atoi(v)
		require.NoError(t, err, "RJQ_TEST_FAILOVER_RUNS")
	}
	c := startCluster(t, bin, 3)
	for run := range runs {
		if !t.Run(fmt.Sprint("run ", run+1), func(t *testing.T) { failoverRun(t, c) }) {
			return
		}
	}
}

// failoverRun is one run of TestFailoverOfAPrimaryLosesNoJob.
func failoverRun(t *testing.T, c *cluster) {
	const jobs = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db := fmt.Sprintf("failover_%d", time.Now().UnixNano())
	var mu sync.Mutex
	runs := make(map[string]int, jobs)
	// The kill comes mid-run, as a crash would: once a tenth of the jobs ran.
	midRun := make(chan struct{})
	handler := func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		runs[j.ID]++
		if len(runs) == jobs/10 {
			close(midRun)
		}
		mu.Unlock()
		return nil, nil
	}
	opts := func(master bool) *queue.Options {
		// The default heartbeat: a run's lease (Heartbeat + 1 s) outlasts a failover.
		o := queuetest.Options(queue.Options{Name: "failover", Concurrency: 5, Shards: 3, Replicas: 3,
			MasterInterval: -1, EventBuffer: 1 << 14})
		if master {
			o.MasterInterval = 5 * time.Second
		}
		return o
	}
	var workers []*queue.Queue
	for i := range 2 {
		q, err := queue.New(ctx, &queue.ConnectOptions{Addresses: c.addrs(), DB: db}, opts(i == 0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		require.NoError(t, q.Ready(ctx))
		workers = append(workers, q)
	}
	batch := make([]*job.Job, jobs)
	for i := range batch {
		batch[i] = workers[0].CreateJob(i)
	}
	_, err := workers[0].AddJob(ctx, batch...)
	require.NoError(t, err)
	for _, q := range workers {
		require.NoError(t, q.Process(handler))
	}

	select {
	case <-midRun:
	case <-ctx.Done():
		t.Fatal("no tenth of the jobs ran before the kill")
	}
	victim := c.primaryOf(t, ctx, db, "failover")
	c.kill(t, victim)
	t.Logf("killed %s, the primary of a shard", victim.name)

	deadline := time.Now().Add(3 * time.Minute)
	var s queue.Summary
	for time.Now().Before(deadline) {
		if s, err = workers[1].Summary(ctx); err == nil && s.Completed == jobs {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling, with the deadline above
	}
	for _, q := range workers {
		require.NoError(t, q.Stop(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	// The guarantee (queue package doc): a job runs once, unless its worker could not
	// reach the table for longer than the run's lease, when the Master fails it and it
	// runs again. A second run without a lease expired before it breaks the guarantee.
	var twice []string
	for id, n := range runs {
		if n != 1 && !leaseExpired(c.logOf(t, ctx, db, id)) {
			twice = append(twice, id)
		} else if n != 1 {
			t.Logf("job %s ran %d times, after its lease expired (at-least-once)", id, n)
		}
	}
	notDone := c.notCompleted(t, ctx, db)
	if len(runs) != jobs || len(twice) > 0 || len(notDone) > 0 {
		t.Errorf("after the kill of %s: %d of %d jobs ran, %d more than once, %d not completed (last summary %+v, %v)",
			victim.name, len(runs), jobs, len(twice), len(notDone), s, err)
		for _, id := range twice[:min(5, len(twice))] {
			t.Logf("job %s ran %d times; its log: %v", id, runs[id], c.logOf(t, ctx, db, id))
		}
		for _, d := range notDone[:min(5, len(notDone))] {
			t.Logf("job %v is %v after %d runs here; its log: %v", d["id"], d["status"], runs[fmt.Sprint(d["id"])], d["log"])
		}
	}
	c.start(t, victim)
}

// leaseExpired reports whether a job's log shows the Master failing its run.
func leaseExpired(log any) bool {
	entries, _ := log.([]any)
	for _, e := range entries {
		if m, _ := e.(map[string]any); m["message"] == "Master: "+job.MessageFailed {
			return true
		}
	}
	return false
}

// cluster is a RethinkDB cluster of the test's own, on loopback.
type cluster struct {
	bin   string
	nodes []*node
}

type node struct {
	name                    string
	dir                     string
	driverPort, clusterPort int
	cmd                     *exec.Cmd
}

// startCluster starts n servers joined in one cluster, stopped when t ends.
func startCluster(t *testing.T, bin string, n int) *cluster {
	c := &cluster{bin: bin}
	base := t.TempDir()
	for i := range n {
		c.nodes = append(c.nodes, &node{name: fmt.Sprintf("n%d", i+1), dir: filepath.Join(base, fmt.Sprint(i+1)),
			driverPort: freePort(t), clusterPort: freePort(t)})
	}
	for _, nd := range c.nodes {
		c.start(t, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd.cmd != nil {
				_ = nd.cmd.Process.Kill()
				_ = nd.cmd.Wait()
			}
		}
	})
	return c
}

// start starts nd (again) and waits until the cluster sees every server.
func (c *cluster) start(t *testing.T, nd *node) {
	args := []string{"--directory", nd.dir, "--server-name", nd.name, "--bind", "127.0.0.1",
		"--driver-port", fmt.Sprint(nd.driverPort), "--cluster-port", fmt.Sprint(nd.clusterPort),
		"--http-port", fmt.Sprint(freePort(t)), "--no-update-check"}
	if nd != c.nodes[0] {
		args = append(args, "--join", fmt.Sprintf("127.0.0.1:%d", c.nodes[0].clusterPort))
	} else if len(c.nodes) > 1 && c.nodes[1].cmd != nil {
		args = append(args, "--join", fmt.Sprintf("127.0.0.1:%d", c.nodes[1].clusterPort))
	}
	nd.cmd = exec.Command(c.bin, args...)
	nd.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, nd.cmd.Start())
	require.Eventually(t, func() bool {
		s, err := r.Connect(r.ConnectOpts{Address: fmt.Sprintf("127.0.0.1:%d", nd.driverPort), Timeout: time.Second})
		if err != nil {
			return false
		}
		defer s.Close()
		var up int
		cur, err := r.DB("rethinkdb").Table("server_status").Count().Run(s)
		return err == nil && cur.One(&up) == nil && up == c.running()
	}, time.Minute, 200*time.Millisecond, "server %s up and joined", nd.name)
}

// running counts the servers started and not killed.
func (c *cluster) running() int {
	n := 0
	for _, nd := range c.nodes {
		if nd.cmd != nil {
			n++
		}
	}
	return n
}

// kill kills nd at once, as a crash would.
func (c *cluster) kill(t *testing.T, nd *node) {
	require.NoError(t, syscall.Kill(-nd.cmd.Process.Pid, syscall.SIGKILL))
	_ = nd.cmd.Wait()
	nd.cmd = nil
}

func (c *cluster) addrs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", nd.driverPort))
	}
	return out
}

func (c *cluster) session(t *testing.T) *r.Session {
	var live []string
	for _, nd := range c.nodes {
		if nd.cmd != nil {
			live = append(live, fmt.Sprintf("127.0.0.1:%d", nd.driverPort))
		}
	}
	s, err := r.Connect(r.ConnectOpts{Addresses: live, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// primaryOf returns the server holding the primary replica of the table's first shard.
func (c *cluster) primaryOf(t *testing.T, ctx context.Context, db, table string) *node {
	var status struct {
		Shards []struct {
			Primary []string `rethinkdb:"primary_replicas"`
		} `rethinkdb:"shards"`
	}
	cur, err := r.DB(db).Table(table).Status().Run(c.session(t), r.RunOpts{Context: ctx})
	require.NoError(t, err)
	require.NoError(t, cur.One(&status))
	require.NotEmpty(t, status.Shards)
	require.NotEmpty(t, status.Shards[0].Primary)
	for _, nd := range c.nodes {
		if nd.name == status.Shards[0].Primary[0] {
			return nd
		}
	}
	t.Fatalf("no server named %s", status.Shards[0].Primary[0])
	return nil
}

// notCompleted reads the jobs that are not completed, for a failure's report.
func (c *cluster) notCompleted(t *testing.T, ctx context.Context, db string) []map[string]any {
	var docs []map[string]any
	cur, err := r.DB(db).Table("failover").Filter(func(d r.Term) r.Term {
		return d.Field("status").Ne("completed").And(d.Field("id").Ne(job.StateDocumentID))
	}).Run(c.session(t), r.RunOpts{Context: ctx})
	if err != nil || cur.All(&docs) != nil {
		t.Logf("could not read the jobs not completed: %v", err)
	}
	return docs
}

// logOf reads a job's log, for a failure's report.
func (c *cluster) logOf(t *testing.T, ctx context.Context, db, id string) any {
	var doc map[string]any
	cur, err := r.DB(db).Table("failover").Get(id).Run(c.session(t), r.RunOpts{Context: ctx})
	if err != nil || cur.One(&doc) != nil {
		return err
	}
	return doc["log"]
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
