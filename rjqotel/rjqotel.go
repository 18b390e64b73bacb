// Package rjqotel traces job runs with OpenTelemetry: a queue.Middleware that wraps each
// run of a handler in a span, as River's otelriver does.
//
//	q, err := queue.New(ctx, conn, &queue.Options{
//		Middleware: []queue.Middleware{rjqotel.Middleware(rjqotel.Options{Queue: "mail"})},
//	})
//
// Each span is named "rjq.run <job name>" (or "rjq.run" for a job whose name is its id,
// the default, so that span names stay few), of
// kind consumer, a child of whatever span the handler's context carries, with the
// attributes rjq.queue, rjq.job.id, rjq.job.name, rjq.job.attempt (the run's
// processCount) and rjq.job.retry_count, and at its end rjq.job.outcome: "completed", or
// "failed" with the error recorded and the span's status Error. A handler that panics
// ends its span with the status Error before the queue recovers the panic.
//
// It is a module of its own (github.com/rjqgo/rethinkdb-job-queue/rjqotel), so that users
// of the queue library download nothing of OpenTelemetry.
package rjqotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// instrumentation names the tracer, as OpenTelemetry asks: the package's import path.
const instrumentation = "github.com/rjqgo/rethinkdb-job-queue/rjqotel"

// Options configure the middleware. The zero value traces with the global tracer
// provider and no queue name.
type Options struct {
	// TracerProvider makes the tracer; nil: otel.GetTracerProvider(), at each run, so
	// that a provider set after the queue starts is used.
	TracerProvider trace.TracerProvider
	// Queue is the queue's name, set on every span as rjq.queue.
	Queue string
}

// Middleware returns the middleware that traces each run.
func Middleware(opts Options) queue.Middleware {
	return func(next queue.Handler) queue.Handler {
		return func(ctx context.Context, j *job.Job) (result any, err error) {
			tp := opts.TracerProvider
			if tp == nil {
				tp = otel.GetTracerProvider()
			}
			// A job's name defaults to its id: a span name per id would be one per run.
			name := "rjq.run"
			if j.Name != "" && j.Name != j.ID {
				name += " " + j.Name
			}
			ctx, span := tp.Tracer(instrumentation).Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("rjq.queue", opts.Queue),
					attribute.String("rjq.job.id", j.ID),
					attribute.String("rjq.job.name", j.Name),
					attribute.Int("rjq.job.attempt", j.ProcessCount),
					attribute.Int("rjq.job.retry_count", j.RetryCount),
				))
			defer func() {
				if p := recover(); p != nil {
					span.SetStatus(codes.Error, fmt.Sprintf("panic: %v", p))
					span.SetAttributes(attribute.String("rjq.job.outcome", "failed"))
					span.End()
					panic(p) // the queue recovers it and fails the job
				}
				outcome := "completed"
				if err != nil {
					outcome = "failed"
					span.RecordError(err)
					span.SetStatus(codes.Error, err.Error())
				}
				span.SetAttributes(attribute.String("rjq.job.outcome", outcome))
				span.End()
			}()
			return next(ctx, j)
		}
	}
}
