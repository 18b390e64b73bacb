package queue_test

import (
	"context"
	"errors"
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

// A worker that handles two kinds of job routes them by name. (Here the Mux's handler is
// called directly; a worker gives it to Queue.Process.)
func ExampleMux() {
	type welcome struct {
		To string `json:"to"`
	}
	mux := queue.NewMux()
	mux.Handle("welcome", queue.HandlerFor(func(_ context.Context, _ *job.Job, w welcome) (any, error) {
		return "welcomed " + w.To, nil
	}))
	mux.Handle("report", func(context.Context, *job.Job) (any, error) { return "reported", nil })
	h := mux.Handler()

	for _, j := range []*job.Job{
		job.New(welcome{To: "ann@example.com"}, job.Options{Name: "welcome"}),
		job.New(nil, job.Options{Name: "report"}),
		job.New(nil, job.Options{Name: "invoice"}),
	} {
		res, err := h(context.Background(), j)
		fmt.Println(res, errors.Is(err, queue.ErrNoHandler))
	}
	// Output:
	// welcomed ann@example.com false
	// reported false
	// <nil> true
}

// Connection settings from one URL, such as a RETHINKDB_URL setting.
func ExampleParseURL() {
	cxn, err := queue.ParseURL("rethinkdb://worker:secret@db1:29015/jobs")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cxn.Address, cxn.DB, cxn.Username)
	// Output: db1:29015 jobs worker
}

// A Kind binds the name "welcome" to its payload type, for the jobs a producer makes and
// the handler a worker registers. A payload of another type fails its run, naming the
// fields the type lacks. (Here the Mux's handler is called directly; a worker gives it to
// Queue.Process, and a producer makes its jobs with Welcome.Job(q, …).)
func ExampleKind() {
	type welcomeEmail struct {
		To string `json:"to"`
	}
	var welcome = queue.NewKind[welcomeEmail]("welcome")

	mux := queue.NewMux()
	welcome.Handle(mux, func(_ context.Context, _ *job.Job, w welcomeEmail) (any, error) {
		return "welcomed " + w.To, nil
	})
	h := mux.Handler()

	good := welcome.New(welcomeEmail{To: "ann@example.com"}, job.Options{})
	fmt.Println(good.Name)
	fmt.Println(h(context.Background(), good))

	// The same name with another payload, as a typo or another producer would add it.
	type invoice struct {
		Customer string  `json:"customer"`
		Total    float64 `json:"total"`
	}
	other := job.New(invoice{Customer: "acme", Total: 12}, job.Options{Name: "welcome"})
	_, err := h(context.Background(), other)
	fmt.Println(errors.Is(err, queue.ErrDecode))
	// Output:
	// welcome
	// welcomed ann@example.com <nil>
	// true
}
