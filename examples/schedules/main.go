// Command schedules enqueues jobs on cron schedules and limits the jobs of one name: a
// report every weekday at 06:00 in Paris, a tick every second that the queue's Queue
// Master enqueues and its worker runs, and mail limited to two starts an hour until the
// limit is removed.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/schedules
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
	_ "time/tzdata" // CRON_TZ zones, on machines without a zoneinfo database

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

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer) (err error) {
	// A Queue Master (every queue is one by default) fires the schedules.
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "scheduled", Concurrency: 3})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	if err := schedule(ctx, q, out); err != nil {
		return err
	}
	// Two mails an hour across every worker of the table.
	if err := q.SetLimit(ctx, "mail", queue.Limit{Starts: 2, Per: time.Hour}); err != nil {
		return err
	}
	if err := printLimits(ctx, q, out); err != nil {
		return err
	}
	var mails []*job.Job
	for _, to := range []string{"ann", "bob", "cat"} {
		mails = append(mails, q.CreateJob(to).SetName("mail"))
	}
	if _, err := q.AddJob(ctx, mails...); err != nil {
		return err
	}

	ticked := make(chan struct{}, 1)
	completed := q.Events(ctx, queue.EventCompleted)
	if err := q.Process(handler(ticked)); err != nil {
		return err
	}
	select {
	case <-ticked:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := q.Unschedule(ctx, "tick"); err != nil {
		return err
	}
	fmt.Fprintln(out, "tick: the Queue Master enqueued a job named tick and it ran; unscheduled")
	return mail(ctx, q, out, completed, mails)
}

// schedule sets the two schedules and prints them as Schedules lists them.
func schedule(ctx context.Context, q *queue.Queue, out io.Writer) error {
	opts := job.Options{Priority: job.High, RetryMax: job.NoRetries}
	err := q.Schedule(ctx, "daily-sales", "CRON_TZ=Europe/Paris 0 6 * * 1-5", map[string]string{"region": "eu"}, &opts)
	if err != nil {
		return err
	}
	if err := q.Schedule(ctx, "tick", "@every 1s", nil, nil); err != nil {
		return err
	}
	schedules, err := q.Schedules(ctx)
	if err != nil {
		return err
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		return err
	}
	for _, s := range schedules {
		fmt.Fprintf(out, "schedule %s (%s): next %s\n", s.Name, s.Spec, describe(s.Next, paris))
	}
	return nil
}

// describe says when next is without the date, which changes from run to run.
func describe(next time.Time, paris *time.Location) string {
	if until := time.Until(next); until <= time.Second {
		return "within a second"
	}
	at := next.In(paris)
	day := "on a weekday"
	if at.Weekday() == time.Saturday || at.Weekday() == time.Sunday {
		day = "on a " + at.Weekday().String()
	}
	return fmt.Sprintf("at %s Paris time, %s", at.Format("15:04"), day)
}

// printLimits prints the limits by job name, as rjq limits shows them.
func printLimits(ctx context.Context, q *queue.Queue, out io.Writer) error {
	limits, err := q.Limits(ctx)
	if err != nil {
		return err
	}
	for name, l := range limits {
		fmt.Fprintf(out, "limit %s: %d starts per %v\n", name, l.Starts, l.Per)
	}
	return nil
}

// mail waits for two mails to complete, shows that the third waits for the rate, then
// removes the limit and waits for the third.
func mail(ctx context.Context, q *queue.Queue, out io.Writer, completed <-chan queue.Event, mails []*job.Job) error {
	isMail := map[string]bool{}
	for _, j := range mails {
		isMail[j.ID] = true
	}
	for done := 0; done < 2; {
		select {
		case e := <-completed:
			if isMail[e.JobID] {
				done++
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	got, err := q.GetJob(ctx, mails[0].ID, mails[1].ID, mails[2].ID)
	if err != nil {
		return err
	}
	count := map[job.Status]int{}
	for _, j := range got {
		count[j.Status]++
	}
	fmt.Fprintf(out, "mail: %d completed; %d waiting for the rate\n", count[job.Completed], count[job.Waiting])

	if err := q.RemoveLimit(ctx, "mail"); err != nil {
		return err
	}
	for _, j := range got {
		if j.Status == job.Waiting {
			if _, err := q.Wait(ctx, j.ID); err != nil {
				return err
			}
			fmt.Fprintf(out, "limit removed: the mail to %s ran\n", j.Data)
		}
	}
	return nil
}

// handler runs the ticks, telling ticked of the first, and the mails.
func handler(ticked chan<- struct{}) queue.Handler {
	mux := queue.NewMux()
	mux.Handle("tick", func(ctx context.Context, j *job.Job) (any, error) {
		select {
		case ticked <- struct{}{}:
		default: // told already
		}
		return nil, nil
	})
	mux.Handle("mail", func(ctx context.Context, j *job.Job) (any, error) {
		select { // send it
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil, nil
	})
	return mux.Handler()
}
