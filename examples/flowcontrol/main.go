// Command flowcontrol shows how a queue holds jobs back across every worker: a group
// (a customer) with a running limit and a rate, a sequence (an account's ledger) whose
// jobs run one at a time in the order they were added, and a unique key that makes a
// job posted twice run once. It prints what happened once every job is done.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/flowcontrol
//
// RJQ_ADDR=host:port points it at another server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// RJQ_ADDR=host:port names the server; empty, localhost:28015.
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// entry is the payload of a ledger job.
type entry struct {
	Op     string `json:"op"`
	Amount int    `json:"amount"`
}

func (e entry) String() string { return fmt.Sprintf("%s %d", e.Op, e.Amount) }

const (
	customer = "customer-42" // the group of the import jobs
	account  = "account-7"   // the sequence of the ledger jobs
)

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "flowcontrol", Concurrency: 4})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	// At most one import of the customer runs at a time, and two start in any second,
	// across every worker of the table.
	if err := q.SetGroupLimit(ctx, customer, 1); err != nil {
		return err
	}
	if err := q.SetGroupRate(ctx, customer, 2, time.Second); err != nil {
		return err
	}
	ids, err := addJobs(ctx, q, out)
	if err != nil {
		return err
	}
	if err := printGroups(ctx, q, out); err != nil {
		return err
	}

	rec := &recorder{}
	if err := q.Process(rec.handler()); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := q.Wait(ctx, id); err != nil {
			return err
		}
	}
	rec.print(out)
	return nil
}

// addJobs adds three imports of the customer, three ledger entries of the account, and
// the same report twice; it returns the ids to wait for.
func addJobs(ctx context.Context, q *queue.Queue, out io.Writer) ([]string, error) {
	var jobs []*job.Job
	for i := 1; i <= 3; i++ {
		jobs = append(jobs, q.CreateJob(fmt.Sprintf("orders-%d.csv", i)).SetName("import").SetGroup(customer))
	}
	for _, e := range []entry{{"deposit", 100}, {"withdraw", 30}, {"deposit", 5}} {
		jobs = append(jobs, q.CreateJob(e).SetName("ledger").SetSequence(account).
			SetRetryDelay(100*time.Millisecond))
	}
	report := func() *job.Job {
		return q.CreateJob("2026-11").SetName("report").SetUniqueKey("report:2026-11")
	}
	jobs = append(jobs, report())
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return nil, err
	}
	again, err := q.AddJob(ctx, report())
	if err != nil {
		return nil, err
	}
	first := jobs[len(jobs)-1]
	fmt.Fprintf(out, "report added twice: the second add returned the first job: %t (duplicate: %t)\n",
		again[0].ID == first.ID, again[0].Duplicate())
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// printGroups prints each group's limits and jobs, as rjq limits shows them.
func printGroups(ctx context.Context, q *queue.Queue, out io.Writer) error {
	groups, _, err := q.Groups(ctx)
	if err != nil {
		return err
	}
	for _, g := range groups {
		fmt.Fprintf(out, "group %s: running limit %d, rate %d per %v, %d waiting\n",
			g.Group, g.Limit, g.Rate.Starts, g.Rate.Per, g.Waiting)
	}
	return nil
}

// recorder runs the jobs and records what each kind did.
type recorder struct {
	mu      sync.Mutex
	running map[string]int // jobs running now, by group or sequence
	most    map[string]int // most jobs running at once, by group or sequence
	starts  []time.Time    // the imports' starts
	ledger  []string       // the ledger's runs, in the order they started
	reports int            // runs of the report
}

// begin records the start of a run of key; end, returned, its end.
func (r *recorder) begin(key string) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running, r.most = map[string]int{}, map[string]int{}
	}
	r.running[key]++
	r.most[key] = max(r.most[key], r.running[key])
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.running[key]--
	}
}

// handler routes the three kinds of job; an import or a ledger entry works for 20 ms.
func (r *recorder) handler() queue.Handler {
	work := func(ctx context.Context) {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	mux := queue.NewMux()
	mux.Handle("import", func(ctx context.Context, j *job.Job) (any, error) {
		defer r.begin(j.Group())()
		r.mu.Lock()
		r.starts = append(r.starts, time.Now())
		r.mu.Unlock()
		work(ctx)
		return nil, nil
	})
	mux.Handle("ledger", queue.HandlerFor(func(ctx context.Context, j *job.Job, e entry) (any, error) {
		defer r.begin(j.Sequence())()
		work(ctx)
		fail := e.Op == "deposit" && e.Amount == 100 && j.RetryCount == 0 // the bank is down, once
		r.mu.Lock()
		defer r.mu.Unlock()
		if fail {
			r.ledger = append(r.ledger, e.String()+" (failed, to be retried)")
			return nil, errors.New("bank unavailable")
		}
		r.ledger = append(r.ledger, e.String())
		return nil, nil
	}))
	mux.Handle("report", func(ctx context.Context, j *job.Job) (any, error) {
		r.mu.Lock()
		r.reports++
		r.mu.Unlock()
		return nil, nil
	})
	return mux.Handler()
}

// print prints what the runs did.
func (r *recorder) print(out io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	waited := len(r.starts) == 3 && r.starts[2].Sub(r.starts[0]) >= time.Second
	fmt.Fprintf(out, "%s: %d imports ran, at most %d at once; the third waited for the rate: %t\n",
		customer, len(r.starts), r.most[customer], waited)
	fmt.Fprintf(out, "%s: at most %d at once, in add order: %s\n",
		account, r.most[account], strings.Join(r.ledger, ", "))
	fmt.Fprintf(out, "report ran %d time(s)\n", r.reports)
}
