package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// serverCPU measures the server's CPU, when its pid was given; scratch waits for the
// server to settle before each measurement with it.
var serverCPU cpuMeter

// scratch opens a connection (an r.Session) and a fresh database name, and returns a
// function that drops it.
func scratch(addr string) (*r.Session, string, func(), error) {
	serverCPU.settle()
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		return nil, "", nil, err
	}
	db := fmt.Sprintf("rjqbench_%06x", rand.Uint32()>>8)
	return s, db, func() {
		_, _ = r.DBDrop(db).RunWrite(s)
		s.Close()
	}, nil
}

// newQueue opens a ready queue on db at addr that is no Queue Master.
func newQueue(ctx context.Context, addr, db string, opts queue.Options) (*queue.Queue, error) {
	host, port := splitAddr(addr)
	opts.DatabaseInitDelay = -1
	opts.MasterInterval = -1
	if opts.Shards == 0 {
		opts.Shards = tableShards
	}
	// The measurements count events: none may be dropped while the reader is behind.
	opts.EventBuffer = 1 << 16
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &opts)
	if err != nil {
		return nil, err
	}
	return q, q.Ready(ctx)
}
