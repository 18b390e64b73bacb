// Command quickstart creates a queue, adds a job and prints the queue's summary.
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
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, connectOptions(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "quickstart"})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	j := q.CreateJob(map[string]any{"to": "ann@example.com", "subject": "Welcome"}).
		SetName("welcome-email").
		SetPriority(job.High)
	if _, err := q.AddJob(ctx, j); err != nil {
		return err
	}
	fmt.Fprintf(out, "added job %s (%s, priority %s)\n", j.ID, j.Status, j.Priority)

	s, err := q.Summary(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "summary: %+v\n", s)
	return nil
}

// connectOptions reads RJQ_ADDR (host:port), defaulting to localhost:28015.
func connectOptions() *queue.ConnectOptions {
	addr := os.Getenv("RJQ_ADDR")
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		log.Fatalf("RJQ_ADDR=%q: want host:port: %v", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		log.Fatalf("RJQ_ADDR=%q: bad port: %v", addr, err)
	}
	return &queue.ConnectOptions{Host: host, Port: p}
}
