// Command quickstart creates a queue, adds a job, processes it and prints the queue's
// summary.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/quickstart
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
	if err := run(ctx, cxn, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// email is the payload of the jobs named "welcome-email".
type email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// welcomeEmail binds the name to the payload type, for the producer and the worker alike.
var welcomeEmail = queue.NewKind[email]("welcome-email")

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "quickstart"})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	j := welcomeEmail.Job(q, email{To: "ann@example.com", Subject: "Welcome"}).SetPriority(job.High)
	if _, err := q.AddJob(ctx, j); err != nil {
		return err
	}
	fmt.Fprintf(out, "added job %s (%s, priority %s)\n", j.ID, j.Status, j.Priority)

	// Subscribe before processing starts, so the completion cannot be missed.
	events := q.Events(ctx, queue.EventCompleted, queue.EventFailed)
	mux := queue.NewMux()
	welcomeEmail.Handle(mux, func(ctx context.Context, j *job.Job, m email) (any, error) {
		fmt.Fprintf(out, "sending %q to %s\n", m.Subject, m.To)
		return "sent", nil
	})
	if err := q.Process(mux.Handler()); err != nil {
		return err
	}
	select {
	case e := <-events:
		fmt.Fprintf(out, "job %s %s\n", e.JobID, e.Type)
	case <-ctx.Done():
		return ctx.Err()
	}

	s, err := q.Summary(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "summary: %+v\n", s)
	return nil
}
