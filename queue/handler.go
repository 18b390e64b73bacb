package queue

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Middleware wraps a Handler with behaviour of its own (logging, tracing, metrics, a
// recover policy…). Options.Middleware applies them in order, the first outermost.
type Middleware func(Handler) Handler

// ErrDecode is wrapped by the error of a job that HandlerFor could not decode: the job
// fails (and is retried per its options, which will not help a payload of the wrong
// shape).
var ErrDecode = fmt.Errorf("%w payload for the handler", job.ErrInvalid)

// HandlerFor adapts a handler of typed payloads: the job's Data is decoded into a T (as
// Job.DataAs does) and passed as data. A payload that does not decode fails the job with
// an error wrapping ErrDecode, and h is not called.
func HandlerFor[T any](h func(ctx context.Context, j *job.Job, data T) (any, error)) Handler {
	if h == nil {
		return nil // Process refuses it with ErrNilHandler
	}
	return func(ctx context.Context, j *job.Job) (any, error) {
		var data T
		if err := j.DataAs(&data); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDecode, err)
		}
		return h(ctx, j, data)
	}
}

// chain returns handler wrapped by middleware, the first outermost.
func chain(handler Handler, middleware []Middleware) Handler {
	for i := len(middleware) - 1; i >= 0; i-- {
		handler = middleware[i](handler)
	}
	return handler
}
