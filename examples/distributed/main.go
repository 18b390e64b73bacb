// Command distributed shows the Queue Master at work: a master and three workers share one
// queue (each with its own connection, as separate processes would), one worker dies in
// the middle of a job, and the master's review brings that job back so another worker
// finishes it.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/distributed
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
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// RJQ_ADDR=host:port names the server; empty, localhost:28015.
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout, 6); err != nil {
		log.Fatal(err)
	}
}

// The job timeout decides how soon the master takes a job of a dead worker for an orphan,
// so both are short here; real ones are minutes.
const (
	jobTimeout     = 3 * time.Second
	masterInterval = time.Second
)

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer, jobs int) (err error) {
	var print sync.Mutex
	say := func(format string, args ...any) {
		print.Lock()
		defer print.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	stops := []func(context.Context) error{}
	defer func() {
		for _, stop := range stops {
			err = errors.Join(err, stop(ctx))
		}
	}()
	open := func(opts *queue.Options) (*queue.Queue, error) {
		opts.Name = "distributed"
		q, err := queue.New(ctx, cxn, opts)
		if err != nil {
			return nil, err
		}
		stops = append(stops, q.Stop)
		return q, q.Ready(ctx)
	}

	// The master processes nothing: it only reviews. Only it raises the orphans it
	// recovers as "reviewed" events with counts.
	master, err := open(&queue.Options{MasterInterval: masterInterval})
	if err != nil {
		return err
	}
	events := master.Events(ctx, queue.EventReviewed, queue.EventCompleted, queue.EventFailed)

	// Two healthy workers, opened now but processing only once the doomed worker has its
	// job: a worker that is not a master reviews the queue when it starts processing, and
	// this way that happens before the job is overdue, so the master is the one to find it.
	workers := make([]*queue.Queue, 2)
	for i := range workers {
		if workers[i], err = open(&queue.Options{MasterInterval: -1}); err != nil {
			return err
		}
	}

	// The doomed worker dies on its first job. It stops itself.
	doomed, err := open(&queue.Options{MasterInterval: -1})
	if err != nil {
		return err
	}
	stops = stops[:len(stops)-1]
	victim, err := crashOnFirstJob(ctx, doomed, master, jobs)
	if err != nil {
		return err
	}
	say("worker 0 died while running job %s", victim)
	for i, w := range workers {
		name := fmt.Sprintf("worker %d", i+1)
		err = w.Process(func(ctx context.Context, j *job.Job) (any, error) {
			if j.ID == victim {
				say("%s runs job %s again (process count %d, retry count %d)", name, j.ID, j.ProcessCount, j.RetryCount)
			}
			return name, nil
		})
		if err != nil {
			return err
		}
	}
	if err := awaitAll(ctx, events, jobs, victim, say); err != nil {
		return err
	}
	say("all %d jobs completed", jobs)
	return nil
}

// crashOnFirstJob makes doomed process, adds jobs jobs through master and, once doomed
// runs its first job, stops it as a crash would: Stop with a context that has already
// ended cuts the handler off, and a handler that has not returned a second later is left
// behind, its job active as a dead process leaves it (one that returns at once is
// handed back, waiting). It returns the job that was running.
func crashOnFirstJob(ctx context.Context, doomed, master *queue.Queue, jobs int) (string, error) {
	died := make(chan string, 1)
	gone := make(chan struct{}) // closed once doomed has stopped: its process is "dead"
	err := doomed.Process(func(ctx context.Context, j *job.Job) (any, error) {
		select {
		case died <- j.ID:
		default:
		}
		<-ctx.Done()
		<-gone
		return nil, context.Cause(ctx)
	})
	if err != nil {
		return "", err
	}
	batch := make([]*job.Job, jobs)
	for i := range batch {
		batch[i] = master.CreateJob(i + 1).SetTimeout(jobTimeout).SetRetryDelay(0)
	}
	if _, err := master.AddJob(ctx, batch...); err != nil {
		return "", err
	}
	var victim string
	select {
	case victim = <-died:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	crash, cancel := context.WithCancel(ctx)
	cancel()
	_ = doomed.Stop(crash)
	close(gone)
	return victim, nil
}

// awaitAll reads the master's events until jobs jobs have completed, and tells of the
// review that recovered the victim's job and of its completion.
func awaitAll(ctx context.Context, events <-chan queue.Event, jobs int, victim string, say func(string, ...any)) error {
	for done := 0; done < jobs; {
		select {
		case e := <-events:
			switch {
			case e.Type == queue.EventReviewed && e.Review.Local && e.Review.Reviewed > 0:
				say("master reviewed the queue: %d orphaned job failed for a retry", e.Review.Reviewed)
			case e.Type == queue.EventCompleted:
				done++
				if e.JobID == victim {
					say("job %s completed after all", e.JobID)
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
