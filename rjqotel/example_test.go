package rjqotel_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqotel"
)

// A queue traces its runs with the middleware in its options; here the middleware wraps
// a handler by hand, with a recorder for a tracer provider.
func ExampleMiddleware() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mw := rjqotel.Middleware(rjqotel.Options{TracerProvider: tp, Queue: "mail"})
	_ = queue.Options{Middleware: []queue.Middleware{mw}} // what a real queue is given

	handler := mw(func(ctx context.Context, j *job.Job) (any, error) { return "sent", nil })
	_, _ = handler(context.Background(), job.New("hello", job.Options{}).SetName("welcome"))
	for _, s := range rec.Ended() {
		fmt.Println(s.Name())
	}
	// Output: rjq.run welcome
}
