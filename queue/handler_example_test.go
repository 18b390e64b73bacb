package queue_test

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func ExampleHandlerFor() {
	type email struct {
		To string `json:"to"`
	}
	h := queue.HandlerFor(func(ctx context.Context, j *job.Job, m email) (any, error) {
		return "sent to " + m.To, nil
	})
	// A queue calls h with each claimed job; called here directly.
	res, err := h(context.Background(), job.New(map[string]any{"to": "ann@example.com"}, job.Options{}))
	fmt.Println(res, err)
	// Output: sent to ann@example.com <nil>
}

func ExampleMiddleware() {
	logged := func(next queue.Handler) queue.Handler {
		return func(ctx context.Context, j *job.Job) (any, error) {
			fmt.Println("start", j.Name)
			defer fmt.Println("end", j.Name)
			return next(ctx, j)
		}
	}
	// Options{Middleware: []queue.Middleware{logged}} wraps the handler given to Process.
	h := logged(func(context.Context, *job.Job) (any, error) { fmt.Println("work"); return nil, nil })
	_, _ = h(context.Background(), job.New(nil, job.Options{Name: "report"}))
	// Output:
	// start report
	// work
	// end report
}
