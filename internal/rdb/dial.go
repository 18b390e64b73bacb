package rdb

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Dial connects with opts, within ctx. The driver's dial cannot be cancelled: when ctx
// ends first, Dial returns ctx's error at once and closes the session when it comes.
// Without a deadline in ctx, opts.Timeout bounds the dial.
func Dial(ctx context.Context, opts r.ConnectOpts) (*r.Session, error) {
	if deadline, ok := ctx.Deadline(); ok {
		opts.Timeout = time.Until(deadline)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type dialed struct {
		session *r.Session
		err     error
	}
	done := make(chan dialed, 1)
	go func() {
		s, err := r.Connect(opts)
		done <- dialed{s, err}
	}()
	select {
	case d := <-done:
		return d.session, d.err
	case <-ctx.Done():
		go func() {
			if d := <-done; d.err == nil {
				d.session.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
