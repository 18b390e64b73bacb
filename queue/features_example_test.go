package queue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Add a job and wait for its outcome, from this process or any other.
func ExampleQueue_Wait() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "thumbnails"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	added, err := q.AddJob(ctx, q.CreateJob("photo-42.jpg"))
	if err != nil {
		log.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := q.Wait(waitCtx, added[0].ID)
	if err != nil {
		log.Fatal(err)
	}
	var url string
	if err := done.Result(&url); err != nil {
		log.Fatal(err) // wraps job.ErrNoResult when it was cancelled or terminated
	}
	fmt.Println(done.Status, url)
}

// Enqueue a report every weekday at 06:00 in Paris; every Queue Master of the table
// shares the work, and each run is enqueued once.
func ExampleQueue_Schedule() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "reports"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	opts := job.DefaultOptions()
	opts.Priority = job.High
	if err := q.Schedule(ctx, "daily-sales", "CRON_TZ=Europe/Paris 0 6 * * 1-5", map[string]any{"region": "eu"}, &opts); err != nil {
		log.Fatal(err)
	}
	schedules, err := q.Schedules(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range schedules {
		fmt.Println(s.Name, "next at", s.Next)
	}
}

// List the live workers of a table: their heartbeats keep them listed.
func ExampleQueue_Workers() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "mail", Heartbeat: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	workers, err := q.Workers(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range workers {
		fmt.Printf("%s: %d/%d running, seen %s ago\n", w.QueueID, w.Running, w.Concurrency, time.Since(w.LastSeen).Round(time.Second))
	}
}

// At most 100 mails a minute across every worker, and only during office hours.
func ExampleQueue_SetLimit() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "outbox"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	err = q.SetLimit(ctx, "mail", queue.Limit{
		Starts: 100,
		Per:    time.Minute,
		Window: &queue.Window{From: "08:00", To: "18:00", Location: "Europe/Paris"},
	})
	if err != nil {
		log.Fatal(err) // wraps queue.ErrInvalidLimit for a bad limit; nothing is written then
	}
}

// Give every customer a fair share of the workers: at most two of a customer's imports
// run at once across every worker process, five for a big one, and at most ten renders
// in all.
func ExampleQueue_SetGroupLimit() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "imports"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	if err := q.SetGroupLimit(ctx, "", 2); err != nil { // every group without its own
		log.Fatal(err)
	}
	if err := q.SetGroupLimit(ctx, "customer-7", 5); err != nil {
		log.Fatal(err)
	}
	if err := q.SetLimit(ctx, "render", queue.Limit{Running: 10}); err != nil {
		log.Fatal(err)
	}
	_, err = q.AddJob(ctx, q.CreateJob(map[string]string{"file": "orders.csv"}).SetGroup("customer-42"))
	if err != nil {
		log.Fatal(err) // wraps job.ErrInvalidGroup for an empty or over-long group
	}
}

// See each group's limit and how many of its jobs wait and run, as rjq limits does.
func ExampleQueue_Groups() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "imports"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	groups, partial, err := q.Groups(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range groups {
		if g.Group == "" { // the default limit, set for the group ""
			fmt.Printf("default limit %d\n", g.Limit)
			continue
		}
		fmt.Printf("%s: %d waiting, %d running, limit %d\n", g.Group, g.Waiting, g.Active, g.Limit)
	}
	if partial {
		fmt.Println("(counted among the first 20,000 unfinished jobs)")
	}
}

// See which job holds each sequence: a failed one waiting out its retry delay keeps the
// jobs behind it waiting.
func ExampleQueue_Sequences() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "ledgers"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	sequences, partial, err := q.Sequences(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sequences {
		fmt.Printf("%s: held by %s (%s), %d waiting behind it\n", s.Sequence, s.Head, s.HeadStatus, s.Waiting)
	}
	if partial {
		fmt.Println("(counted among the first 20,000 unfinished jobs of sequences)")
	}
}

// Hear about jobs that will not run again, and retry on a policy of the queue's own.
func ExampleOptions_onTerminated() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{
		Name: "payments",
		OnTerminated: func(j *job.Job, err error) {
			log.Printf("job %s gave up after %d retries: %v", j.ID, j.RetryCount, err)
		},
		// 1, 4, 9, … minutes; a job's own exponential job.Backoff would win.
		RetryBackoff: func(_ *job.Job, retry int) time.Duration {
			return time.Duration(retry*retry) * time.Minute
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)
}

// A worker process, one of several on a table (containers, pods): it raises the events of
// its own work only, and its changefeed carries only what its processing needs, which
// keeps the server's work for the feeds from growing with the square of the processes.
func ExampleOptions_localEventsOnly() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{
		Name:            "mail",
		Concurrency:     50,
		MasterInterval:  -1, // one or two Queue Masters per table are enough
		LocalEventsOnly: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)
	failed := q.Events(ctx, queue.EventFailed) // this worker's own failures only
	go func() {
		for e := range failed {
			log.Printf("job %s failed here: %v", e.JobID, e.Err)
		}
	}()
	if err := q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		return nil, nil // send the mail
	}); err != nil {
		log.Fatal(err)
	}
}
