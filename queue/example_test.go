package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Connect to RethinkDB on localhost:28015, add a job and read the queue's summary.
func Example() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, &queue.Options{Name: "mail"})
	if err != nil {
		log.Fatal(err) // wraps queue.ErrConnect when no server answers
	}
	defer q.Stop(ctx)

	j := q.CreateJob(map[string]any{"to": "ann@example.com"}).
		SetName("welcome").
		SetPriority(job.High).
		SetRetryMax(5)
	if _, err := q.AddJob(ctx, j); err != nil {
		log.Fatal(err)
	}
	s, err := q.Summary(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Waiting, "waiting")
}

// Invalid job options are kept on the job and refused by AddJob, which writes nothing.
func ExampleQueue_AddJob() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	good := q.CreateJob("resize image 1")
	bad := q.CreateJob("resize image 2").SetTimeout(-time.Second)
	_, err = q.AddJob(ctx, good, bad)
	fmt.Println(errors.Is(err, job.ErrInvalidTimeout), errors.Is(err, job.ErrInvalid))
}

// Find jobs by a map of field values or by a ReQL function.
func ExampleQueue_FindJob() {
	ctx := context.Background()
	q, err := queue.New(ctx, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(ctx)

	mine, err := q.FindJob(ctx, map[string]any{"data": map[string]any{"user": "ann"}})
	if err != nil {
		log.Fatal(err)
	}
	retried, err := q.FindJob(ctx, func(doc r.Term) r.Term { return doc.Field("retryCount").Gt(0) })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(mine), len(retried))
}

// Subscribe to some events; the channel closes when the context ends or the queue stops.
func ExampleQueue_Events() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := queue.New(ctx, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Stop(context.Background())

	for e := range q.Events(ctx, queue.EventAdded, queue.EventCancelled) {
		fmt.Println(e.Type, e.JobID, e.Local)
	}
}

// Event types are the Node.js library's event names.
func ExampleEventType() {
	fmt.Println(queue.EventType("completed") == queue.EventCompleted, queue.EventReanimated)
	// Output: true reanimated
}
