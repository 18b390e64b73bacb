package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// ErrNoHandler is wrapped by the error a job fails with when a Mux has no handler for its
// name. The job is retried like any failed job (per its RetryMax and RetryDelay), so that
// during a rolling deploy a newer worker that knows the name can take it.
var ErrNoHandler = errors.New("queue: no handler for the job's name")

// Mux routes each job to the handler registered for its name (Job.Name), as
// http.ServeMux routes requests by path. A queue has one handler; a Mux lets it serve many
// kinds of job:
//
//	mux := queue.NewMux()
//	mux.Handle("welcome-email", queue.HandlerFor(sendWelcome))
//	mux.Handle("resize-image", resize)
//	err := q.Process(mux.Handler())
//
// Limits, schedules and metrics are per name too. A job with no name is named by its id,
// which no Mux knows. A Mux is safe for concurrent use; Handle may be called while jobs
// run.
type Mux struct {
	mu         sync.RWMutex
	handlers   map[string]Handler
	middleware []Middleware
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[string]Handler{}} }

// Handle registers h for the jobs named name. It panics on an empty name, a nil handler, or
// a name registered already, which are mistakes in the program, as http.ServeMux does.
func (m *Mux) Handle(name string, h Handler) {
	if name == "" {
		panic("queue: Mux.Handle: empty job name")
	}
	if h == nil {
		panic("queue: Mux.Handle: nil handler for " + fmt.Sprintf("%q", name))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.handlers[name]; ok {
		panic(fmt.Sprintf("queue: Mux.Handle: a handler for %q is registered already", name))
	}
	m.handlers[name] = h
}

// Use adds middleware that wraps every handler of the Mux, in order, the first outermost,
// inside the queue's own Options.Middleware (which wrap the whole Mux). It panics on a nil
// middleware.
func (m *Mux) Use(mw ...Middleware) {
	for _, f := range mw {
		if f == nil {
			panic("queue: Mux.Use: nil middleware")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.middleware = append(m.middleware, mw...)
}

// Names returns the job names the Mux has handlers for, sorted.
func (m *Mux) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := make([]string, 0, len(m.handlers))
	for n := range m.handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Handler returns the Handler that routes each job to the handler of its name, wrapped in
// the Mux's middleware. A job whose name has none fails with an error wrapping
// ErrNoHandler that names it.
func (m *Mux) Handler() Handler {
	return func(ctx context.Context, j *job.Job) (any, error) {
		m.mu.RLock()
		h, ok := m.handlers[j.Name]
		mw := m.middleware
		m.mu.RUnlock()
		if !ok {
			return nil, fmt.Errorf("%w %s (this worker handles %v)", ErrNoHandler, errtext.Key(j.Name), m.Names())
		}
		return chain(h, mw)(ctx, j)
	}
}
