// Command events runs two queues on one table, as two processes would: one adds jobs, the
// other processes them, and the adder prints the events it receives from the worker
// through the changefeed.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/events
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
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// RJQ_ADDR=host:port names the server; empty, localhost:28015.
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout, 3); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer, jobs int) (err error) {
	opts := func() *queue.Options { return &queue.Options{Name: "events", MasterInterval: -1} }
	adder, err := queue.New(ctx, cxn, opts())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, adder.Stop(ctx)) }()
	worker, err := queue.New(ctx, cxn, opts())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, worker.Stop(ctx)) }()

	// Both queues must be ready (their feeds open) before the first job is added.
	for _, q := range []*queue.Queue{adder, worker} {
		if err := q.Ready(ctx); err != nil {
			return err
		}
	}
	err = worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		for _, p := range []float64{50, 100} {
			if err := j.UpdateProgress(ctx, p); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return err
	}

	events := adder.Events(ctx, queue.EventActive, queue.EventProgress, queue.EventCompleted)
	batch := make([]*job.Job, jobs)
	for i := range batch {
		batch[i] = adder.CreateJob(fmt.Sprintf("job %d", i+1))
	}
	if _, err := adder.AddJob(ctx, batch...); err != nil {
		return err
	}
	fmt.Fprintf(out, "adder added %d jobs; worker is %s\n", jobs, worker.ID())
	for done := 0; done < jobs; {
		select {
		case e := <-events:
			from := "worker"
			if e.QueueID != worker.ID() {
				from = e.QueueID
			}
			switch e.Type {
			case queue.EventProgress:
				fmt.Fprintf(out, "%-9s %s from %s (local: %t): %.0f%%\n", e.Type, e.JobID, from, e.Local, e.Progress)
			default:
				fmt.Fprintf(out, "%-9s %s from %s (local: %t)\n", e.Type, e.JobID, from, e.Local)
			}
			if e.Type == queue.EventCompleted {
				done++
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
