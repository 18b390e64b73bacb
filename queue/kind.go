package queue

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/rjqgo/rethinkdb-job-queue/internal/payload"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Kind binds a job name to the type of its payload, as River binds a kind to its
// arguments' type: the jobs a Kind makes carry its name and a T, and the handler it
// registers takes a T, decoded strictly. Declare each kind once, beside its payload type,
// and use it on both sides:
//
//	var Welcome = queue.NewKind[WelcomeEmail]("welcome")
//
//	j := Welcome.Job(q, WelcomeEmail{To: "ann@example.com"}) // named "welcome"
//	_, err := q.AddJob(ctx, j)
//
//	Welcome.Handle(mux, func(ctx context.Context, j *job.Job, w WelcomeEmail) (any, error) { … })
//
// A misspelt name is then a compile error, and a payload of another type cannot be added
// under the name from Go. A job made elsewhere (a Node.js producer, rjq add, a document
// written by hand) whose payload has a field that T lacks fails its run with an error
// wrapping ErrDecode that names the fields, instead of running with a zero value where
// the data was.
type Kind[T any] struct {
	name string
}

// NewKind returns the Kind of the jobs named name, whose payloads are Ts. It panics on an
// empty name, a mistake in the program, as Mux.Handle does.
func NewKind[T any](name string) Kind[T] {
	if name == "" {
		panic("queue: NewKind: empty job name")
	}
	return Kind[T]{name: name}
}

// Name returns the job name of the kind.
func (k Kind[T]) Name() string { return k.name }

// Job returns a new job of the kind with data as its payload and a's job options
// (CreateJob: a Queue's, or rjqtest.Adder's in a test), to add with AddJob.
func (k Kind[T]) Job(a Adder, data T) *job.Job {
	return a.CreateJob(data).SetName(k.name)
}

// New returns a new job of the kind with data as its payload and opts as job.New takes
// them (not a queue's job options), its Name replaced by the kind's.
func (k Kind[T]) New(data T, opts job.Options) *job.Job {
	opts.Name = k.name
	return job.New(data, opts)
}

// Handler adapts h as HandlerFor does, with a strict decode: a payload that has a field
// T lacks (at any depth) fails the run with an error wrapping ErrDecode that names the
// fields, and h is not called.
func (k Kind[T]) Handler(h func(ctx context.Context, j *job.Job, data T) (any, error)) Handler {
	if h == nil {
		return nil // Process and Mux.Handle refuse it
	}
	return func(ctx context.Context, j *job.Job) (any, error) {
		var data T
		if err := k.decode(j, &data); err != nil {
			return nil, err
		}
		return h(ctx, j, data)
	}
}

// Handle registers h, through Handler, on m for the jobs of the kind.
func (k Kind[T]) Handle(m *Mux, h func(ctx context.Context, j *job.Job, data T) (any, error)) {
	m.Handle(k.name, k.Handler(h))
}

// decode decodes j's payload into data, refusing a payload with a field T lacks.
func (k Kind[T]) decode(j *job.Job, data *T) error {
	if err := j.DataAs(data); err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	stored, err := payload.Encode(j.Data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if extra := payload.Unknown(stored, reflect.TypeFor[T]()); len(extra) > 0 {
		for i := range extra {
			extra[i] = strings.TrimPrefix(extra[i], ".")
		}
		return fmt.Errorf("%w: job %s of kind %q: its payload has fields %s lacks: %s (was it added with another type?)",
			ErrDecode, j.ID, k.name, reflect.TypeFor[T](), strings.Join(extra, ", "))
	}
	return nil
}
