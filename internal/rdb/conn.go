package rdb

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Conn is a session the queue dialed itself, which it replaces with a new one when its
// connections go silent. The driver keeps a connection whose peer stopped answering
// without closing (a network that drops packets, a half-open socket): every query sent on
// it waits until its context ends. So when a query of the queue runs out of its
// context's time (an outcome write, a heartbeat, an AddJob with a deadline), Stalled dials
// a new session in the background and swaps it in; the old one is closed, which ends every query and changefeed still waiting on
// it, and their callers try again on the new one.
//
// A Conn is an r.QueryExecutor: queries are built from the options of the session it dialed at the start (the
// embedded session, never queried after a swap) and run on the current one.
type Conn struct {
	*r.Session // builds the queries; see Conn

	opts r.ConnectOpts
	log  *slog.Logger
	cur  atomic.Pointer[r.Session]

	mu       sync.Mutex
	healing  bool
	healedAt time.Time // the last swap
	closed   bool
	done     chan struct{} // closed by Close: a heal under way stops
}

// healDialTimeout bounds each dial of a heal; a heal dials again after healPause until
// one succeeds or the Conn closes.
// A Stalled within healGap of the last swap is ignored: the queries that timed out on the
// old session report it for a while after.
const (
	healDialTimeout = time.Second
	healPause       = 100 * time.Millisecond
	healGap         = time.Second
)

// NewConn makes s, dialed with opts, a Conn.
func NewConn(s *r.Session, opts r.ConnectOpts, log *slog.Logger) *Conn {
	c := &Conn{Session: s, opts: opts, log: log, done: make(chan struct{})}
	c.cur.Store(s)
	return c
}

// IsConnected reports whether the current session is connected.
func (c *Conn) IsConnected() bool { return c.cur.Load().IsConnected() }

// Query runs q on the current session.
func (c *Conn) Query(ctx context.Context, q r.Query) (*r.Cursor, error) {
	return c.cur.Load().Query(ctx, q)
}

// Exec runs q on the current session.
func (c *Conn) Exec(ctx context.Context, q r.Query) error {
	return c.cur.Load().Exec(ctx, q)
}

// Stalled says that a query ran out of its context's time: the session's connections may
// be silent. (A query of a healthy server that a short deadline cut off costs a needless
// swap, at most one a second.) Unless a heal is under way, it dials a new session
// in the background, swaps it in and closes the old one.
func (c *Conn) Stalled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.healing || c.closed || time.Since(c.healedAt) < healGap {
		return
	}
	c.healing = true
	go c.heal()
}

// heal dials until a new session is up (then swaps it in) or the Conn closes. It clears
// healing itself, under the lock, so that a Stalled after it may start the next heal.
func (c *Conn) heal() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), healDialTimeout)
		s, err := Dial(ctx, c.opts)
		cancel()
		if err == nil {
			c.mu.Lock()
			if c.closed {
				c.healing = false
				c.mu.Unlock()
				s.Close()
				return
			}
			old := c.cur.Swap(s)
			c.healing, c.healedAt = false, time.Now()
			c.mu.Unlock()
			c.log.Warn("a query of the queue's own timed out: replaced the session's connections, which may have gone silent")
			// Closing waits for the queries still running on the old session (the driver
			// holds its lock for a query's length, which each query's context and the STOP
			// timeout bound); the next heal must not wait for that.
			go old.Close()
			return
		}
		select {
		case <-c.done:
			c.mu.Lock()
			c.healing = false
			c.mu.Unlock()
			return
		case <-time.After(healPause):
		}
	}
}

// Close stops healing and closes the current session.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	return c.cur.Load().Close()
}
