// Package lifecycle is the one way a queue runs its background services (database
// set-up, the changefeed, the Master's loops, the processing loop and its heartbeat): a
// Service owns a context and the goroutines started in it; Cancel ends the context and
// Wait waits for the goroutines, so whoever holds the Service stops everything it started.
package lifecycle

import (
	"context"
	"sync"
)

// Service is a context and the goroutines that run in it. The zero value is not usable;
// use New.
type Service struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// New returns a running Service whose context is not cancelled.
func New() *Service {
	s := &Service{}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// Context is the service's context, cancelled by Cancel.
func (s *Service) Context() context.Context { return s.ctx }

// Go runs f in a goroutine of the service, with the service's context.
func (s *Service) Go(f func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
}

// Cancel cancels the service's context with cause (context.Canceled when nil), telling its
// goroutines to end; it does not wait for them.
func (s *Service) Cancel(cause error) { s.cancel(cause) }

// Wait waits for the service's goroutines to end, or for ctx, whose error it returns
// then.
func (s *Service) Wait(ctx context.Context) error {
	return Wait(ctx, s.wg.Wait)
}

// Stop cancels the service and waits for its goroutines (see Wait).
func (s *Service) Stop(ctx context.Context) error {
	s.Cancel(nil)
	return s.Wait(ctx)
}

// Wait runs each wait function in turn and returns early with ctx's error if ctx ends
// first (the wait functions then finish in the background).
func Wait(ctx context.Context, waits ...func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, w := range waits {
			w()
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
