// Command worker processes jobs several at a time, the way a real worker process does: it
// reports progress, retries jobs that fail, cancels jobs it cannot do, prints what happens,
// and on Ctrl-C (or SIGTERM) stops taking jobs and lets the running ones finish.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/worker            # adds 10 demo jobs, runs until Ctrl-C
//	go run ./examples/worker -jobs 0    # only processes what is in the queue
//	go run ./examples/worker -drain     # stops once every job is finished
//
// RJQ_ADDR=host:port points it at another server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	jobs := flag.Int("jobs", 10, "demo jobs to add before processing")
	drain := flag.Bool("drain", false, "stop once every job is finished instead of waiting for Ctrl-C")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// RJQ_ADDR=host:port names the server; empty, localhost:28015.
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout, *jobs, *drain); err != nil {
		log.Fatal(err)
	}
}

// image is the payload of a demo job.
type image struct {
	Name  string `json:"name"`
	Flaky bool   `json:"flaky"`
}

// stopTimeout is how long running jobs get to finish after Ctrl-C.
const stopTimeout = 30 * time.Second

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer, jobs int, drain bool) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "images", Concurrency: 3})
	if err != nil {
		return err
	}
	defer func() {
		// ctx is done by now; give the running jobs a fresh deadline to finish.
		stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		fmt.Fprintln(out, "stopping: waiting for running jobs")
		err = errors.Join(err, q.Stop(stopCtx))
	}()
	if err := addDemoJobs(ctx, q, jobs); err != nil {
		return err
	}
	events := q.Events(ctx, queue.EventCompleted, queue.EventFailed, queue.EventTerminated,
		queue.EventCancelled, queue.EventIdle)
	if err := q.Process(resize); err != nil {
		return err
	}
	fmt.Fprintf(out, "processing queue %s, %d jobs at a time\n", q.Name(), q.Concurrency())
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			switch e.Type {
			case queue.EventIdle:
				if drain && finished(ctx, q) {
					fmt.Fprintln(out, "every job is finished")
					return nil
				}
			default:
				fmt.Fprintf(out, "%-10s %s\n", e.Type, e.JobID)
			}
		}
	}
}

// addDemoJobs adds n image jobs: one in five fails its first run and is retried a second
// later, and one is corrupt and gets cancelled.
func addDemoJobs(ctx context.Context, q *queue.Queue, n int) error {
	if n < 1 {
		return nil
	}
	batch := make([]*job.Job, n)
	for i := range batch {
		img := image{Name: fmt.Sprintf("photo-%02d.png", i), Flaky: i%5 == 1}
		if i == n-1 {
			img.Name = "corrupt.png"
		}
		batch[i] = q.CreateJob(img).SetName(img.Name).SetRetryMax(2).SetRetryDelay(time.Second).SetTimeout(10 * time.Second)
	}
	_, err := q.AddJob(ctx, batch...)
	return err
}

// resize is the handler: it works in steps, reporting progress, and honours ctx, which ends
// when the job is cancelled, times out, or the worker is stopped for good.
func resize(ctx context.Context, j *job.Job) (any, error) {
	var img image
	if err := j.DataAs(&img); err != nil {
		return nil, job.Cancel("unreadable payload: " + err.Error())
	}
	if img.Name == "corrupt.png" {
		return nil, job.Cancel("corrupt image")
	}
	if img.Flaky && j.RetryCount == 0 {
		return nil, errors.New("storage timeout")
	}
	for step := 1; step <= 4; step++ {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if err := j.UpdateProgress(ctx, float64(step*25)); err != nil {
			return nil, err
		}
	}
	return map[string]any{"thumbnail": "thumb-" + img.Name}, nil
}

// finished reports whether no job is waiting, running or due for a retry.
func finished(ctx context.Context, q *queue.Queue) bool {
	s, err := q.Summary(ctx)
	return err == nil && s.Waiting+s.Active+s.Failed == 0
}
