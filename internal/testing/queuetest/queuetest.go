// Package queuetest is the setup the library's own tests share, so that no test builds
// it by hand: connection options for the test server on a database of the test's own,
// and a context that ends with the test.
package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Connect returns the options that reach the test server (see testserver.Get) on a new
// database of the test's own, dropped when the test ends.
func Connect(tb testing.TB) *queue.ConnectOptions {
	tb.Helper()
	return ConnectTo(testserver.Get(tb), testserver.DB(tb))
}

// ConnectTo returns the options that reach srv on database db.
func ConnectTo(srv testserver.Server, db string) *queue.ConnectOptions {
	return &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db}
}

// Context returns a context that ends with the test, or after d.
func Context(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// Options returns o for a test's queue: the database assertion starts at once
// (DatabaseInitDelay -1) instead of after the default delay, which spreads out the
// queues of a real deployment that start together.
func Options(o queue.Options) *queue.Options {
	o.DatabaseInitDelay = -1
	return &o
}
