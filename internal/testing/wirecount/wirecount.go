// Package wirecount is a loopback TCP proxy that counts the RethinkDB wire-protocol
// queries its clients send. Tests and benchmarks put it between a driver session and the
// server to measure real database round trips, without instrumenting the code under test.
//
// The proxy copies bytes through untouched in both directions and parses only the
// client→server stream. It understands what gopkg.in/rethinkdb/rethinkdb-go.v6 sends:
//
//   - the V1_0 handshake: the 4-byte magic number 0x34c2bdc3 (little-endian), then two
//     null-terminated JSON messages (SCRAM client-first and client-final), each sent after
//     the server has answered the one before;
//   - the V0_4 and V0_3 handshakes: magic, 4-byte auth key length, the auth key, and the
//     4-byte protocol type;
//   - then query frames: an 8-byte token, a 4-byte little-endian length, and that many
//     bytes of JSON, [type, term?, opts?], where type 1 is START, 2 CONTINUE, 3 STOP,
//     4 NOREPLY_WAIT and 5 SERVER_INFO.
//
// Every frame counts as a query, because every frame is a message the server answers (or,
// for a noreply START, at least has to read and run). A connection that opens with an
// unknown magic number is forwarded without counting.
//
// The proxy also makes the faults of a network: answers lost after a query ran
// (LoseAnswers) or queries that run after the client gave them up (LandLate), every
// connection reset and new ones refused for a while (Partition), and
// connections that go silent, forwarding nothing and never closing (Blackhole).
package wirecount

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Handshake magic numbers of the RethinkDB protocol versions (ql2.proto VersionDummy).
const (
	magicV1_0 = 0x34c2bdc3
	magicV0_4 = 0x400c2d20
	magicV0_3 = 0x5f75e83e
)

// Query types of ql2.proto that are told apart here.
const (
	queryContinue = 2
)

// frameHeaderLen is the token (8 bytes) and the length (4 bytes) before a frame's JSON.
const frameHeaderLen = 12

// dialTimeout bounds the dial to the target, so a dead target does not hold a client
// connection (and Close) for long.
const dialTimeout = 10 * time.Second

// Proxy forwards loopback connections to a RethinkDB server and counts the query frames
// the clients send. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	queries   atomic.Uint64
	continues atomic.Uint64

	// ctx ends with Close, which cancels dials to the target still under way.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{}
	tallies []*Tally
	// faults are the answers to drop; see LoseAnswers.
	faults []*fault
	// refuseUntil and silentUntil end a Partition and a Blackhole; pairs are the open
	// connections' pairs, which a Blackhole silences.
	refuseUntil, silentUntil time.Time
	pairs                    map[*pair]struct{}
	// wg counts every goroutine the proxy started; it is only added to under mu while not
	// closed, so that Close's Wait sees every goroutine there will ever be.
	wg sync.WaitGroup
}

// Start listens on 127.0.0.1 at a free port and forwards each connection it accepts to
// target (host:port) until Close.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[net.Conn]struct{}), pairs: make(map[*pair]struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients connect to, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Host returns the host clients connect to, always 127.0.0.1; with Port it fills driver
// options that take the two apart.
func (p *Proxy) Host() string { return p.ln.Addr().(*net.TCPAddr).IP.String() }

// Port returns the port clients connect to.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Queries returns how many query frames clients have sent since Start or the last Reset,
// over all connections: STARTs, CONTINUEs, STOPs, NOREPLY_WAITs and SERVER_INFOs alike.
// A frame is counted before it is forwarded, so once a client has its answer the count
// includes the query.
func (p *Proxy) Queries() uint64 { return p.queries.Load() }

// Continues returns how many of the Queries were CONTINUEs, the requests for a cursor's
// next batch, which a driver sends without the caller writing a query.
func (p *Proxy) Continues() uint64 { return p.continues.Load() }

// Reset sets every count to zero, Tallies included, so that setup traffic (connecting,
// creating tables, loading data) stays out of what is measured next.
func (p *Proxy) Reset() {
	p.queries.Store(0)
	p.continues.Store(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tallies {
		t.n.Store(0)
	}
}

// Tally counts the query frames whose JSON contains every one of subs, from now on, over
// all connections. It tells kinds of queries apart by keys or names that only they carry
// together, which is as close as the wire gets to knowing which code sent them. It panics
// without a non-empty string to look for.
func (p *Proxy) Tally(subs ...string) *Tally {
	t := &Tally{}
	for _, s := range subs {
		if s == "" {
			panic("wirecount: Tally of an empty string")
		}
		t.subs = append(t.subs, []byte(s))
	}
	if len(t.subs) == 0 {
		panic("wirecount: Tally of nothing")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tallies = append(p.tallies, t)
	return t
}

// Tally is a count of the query frames that contain a set of strings; see Proxy.Tally.
type Tally struct {
	subs [][]byte
	n    atomic.Uint64
}

// Count returns how many query frames contained the strings since the Tally was made or
// the proxy last Reset.
func (t *Tally) Count() uint64 { return t.n.Load() }

// matches reports whether body contains every string of the tally.
func (t *Tally) matches(body []byte) bool {
	for _, s := range t.subs {
		if !bytes.Contains(body, s) {
			return false
		}
	}
	return true
}

// fault drops the answers of the next n frames that contain every one of subs; a
// silencing one silences the proxy after its frame instead, and closes fired.
type fault struct {
	Tally
	left    int
	silence bool
	fired   chan struct{}
	// late, when not zero, holds the frame back that long and cuts the client off at once
	// (see LandLate).
	late time.Duration
}

// LoseAnswers makes the next n query frames that contain every one of subs reach the
// server, and then cuts the client's connection before the answer comes back: the server
// runs the query (a write lands), and the client sees its connection fail, so it cannot
// tell whether the query ran. This is the fault that a server crash or a network cut
// between a write and its answer makes.
func (p *Proxy) LoseAnswers(n int, subs ...string) {
	f := &fault{left: n}
	f.subs = p.Tally(subs...).subs
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// LandLate makes the next query frame that contains every one of subs reach the server
// only after d, and then cuts the client's connection (the answer goes nowhere): a client
// whose timeout is shorter than d gives the query up, and it runs (a write lands) later,
// after whatever the client did meanwhile. This is the fault of a server too busy to run
// a query before the client's timeout.
func (p *Proxy) LandLate(d time.Duration, subs ...string) {
	f := &fault{left: 1, late: d}
	f.subs = p.Tally(subs...).subs
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// SilenceAfter makes the next query frame that contains every one of subs reach the
// server, and then silences the proxy for good, as a Blackhole of every connection, new
// ones included: the client never hears the answer, nor reaches the server again. The
// channel returned is closed then. This is the client's side of a process killed right
// after a write: a test kills it for real once the channel is closed.
func (p *Proxy) SilenceAfter(subs ...string) <-chan struct{} {
	f := &fault{left: 1, silence: true, fired: make(chan struct{})}
	f.subs = p.Tally(subs...).subs
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
	return f.fired
}

// pair is one client connection and its connection to the target.
type pair struct {
	// silent is set by a Blackhole: the pair forwards nothing from then on, and stays
	// open.
	silent atomic.Bool
}

// Partition resets every open connection and, for d, every new one as soon as it is
// accepted: the fault of a network partition that clients notice (connection reset,
// refused). After d, new connections work again.
func (p *Proxy) Partition(d time.Duration) {
	p.mu.Lock()
	p.refuseUntil = time.Now().Add(d)
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Blackhole silences every open connection for good (it forwards nothing, in either
// direction, and stays open: a client waits on it until its own timeout) and, for d,
// every new one too: the fault of a network that drops packets without a word. After d,
// new connections work again; the silenced ones never do.
func (p *Proxy) Blackhole(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silentUntil = time.Now().Add(d)
	for pr := range p.pairs {
		pr.silent.Store(true)
	}
}

// newPair registers a connection pair, silent when a Blackhole is on; it reports false
// when a Partition is on, and the client is to be cut off.
func (p *Proxy) newPair() (*pair, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Before(p.refuseUntil) {
		return nil, false
	}
	pr := &pair{}
	pr.silent.Store(now.Before(p.silentUntil))
	p.pairs[pr] = struct{}{}
	return pr, true
}

func (p *Proxy) dropPair(pr *pair) {
	p.mu.Lock()
	delete(p.pairs, pr)
	p.mu.Unlock()
}

// ClearFaults drops every answer loss still pending (see LoseAnswers).
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// takeFault returns the fault the frame body fires, if any.
func (p *Proxy) takeFault(body []byte) *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.faults {
		if f.left > 0 && f.matches(body) {
			f.left--
			return f
		}
	}
	return nil
}

// Close stops accepting, closes every open connection in both directions and waits for
// the proxy's goroutines to end. Clients see their connections drop. Calling Close again
// does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	p.cancel()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// track registers c to be closed by Close, and reports false (closing c) when the proxy
// is already closed. With start set it also counts one more goroutine, under the same
// lock, so Close cannot miss it.
func (p *Proxy) track(c net.Conn, start bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	if start {
		p.wg.Add(1)
	}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			// Closed by Close, or out of file descriptors: a test proxy then stops taking
			// clients, which fail to connect and say so, rather than spin here.
			return
		}
		if !p.track(c, true) {
			return
		}
		go p.serve(c)
	}
}

// serve forwards one client connection to a new connection to the target. When either
// direction ends, both connections are closed: the RethinkDB protocol has no use for a
// half-closed connection, and closing ends the other direction's copy.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	pr, ok := p.newPair()
	if !ok {
		return // partitioned: the client's connection is reset at once
	}
	defer p.dropPair(pr)
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server, true) {
		return
	}
	defer p.untrack(server)
	answered := make(chan struct{})
	go func() {
		defer p.wg.Done()
		defer close(answered)
		_, _ = io.Copy(silenceable{client, pr}, server)
		_ = client.Close()
		_ = server.Close()
	}()
	if lost := p.forwardQueries(client, server, pr); lost {
		// Leave the server's side open until it answers into the closed client, so that
		// the query is not interrupted; Close cuts the wait short.
		select {
		case <-answered:
		case <-p.ctx.Done():
		case <-time.After(time.Minute):
		}
	}
	_ = client.Close()
	_ = server.Close()
}

// forwardQueries copies the client's bytes to the server, counting each query frame
// before the bytes that complete it are written. It returns lost true when it cut the
// client off after a query whose answer is to be lost (see LoseAnswers).
func (p *Proxy) forwardQueries(client, server net.Conn, pr *pair) (lost bool) {
	ps := parser{wants: p.wantsBodies}
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 && pr.silent.Load() {
			continue // swallowed
		}
		if n > 0 {
			lose, silence, late := false, []*fault(nil), time.Duration(0)
			ps.feed(buf[:n], func(typ int, body []byte) {
				p.count(typ, body)
				switch f := p.takeFault(body); {
				case f == nil:
				case f.silence:
					silence = append(silence, f)
				case f.late > 0:
					late = max(late, f.late)
				default:
					lose = true
				}
			})
			if late > 0 {
				select {
				case <-time.After(late):
				case <-p.ctx.Done():
					return false
				}
				_, werr := server.Write(buf[:n])
				_ = client.Close()
				return werr == nil
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return false
			}
			if len(silence) > 0 {
				p.Blackhole(100 * 365 * 24 * time.Hour)
				for _, f := range silence {
					close(f.fired)
				}
				continue
			}
			if lose {
				_ = client.Close()
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// silenceable is a connection's writer that swallows what it is given once its pair is
// silenced.
type silenceable struct {
	w  io.Writer
	pr *pair
}

func (s silenceable) Write(b []byte) (int, error) {
	if s.pr.silent.Load() {
		return len(b), nil
	}
	return s.w.Write(b)
}

// count records one complete frame; body is its JSON when tallies want it, else only
// its first bytes.
func (p *Proxy) count(typ int, body []byte) {
	p.queries.Add(1)
	if typ == queryContinue {
		p.continues.Add(1)
	}
	p.mu.Lock()
	tallies := p.tallies
	p.mu.Unlock()
	for _, t := range tallies {
		if t.matches(body) {
			t.n.Add(1)
		}
	}
}

// wantsBodies reports whether any tally needs whole frame bodies kept.
func (p *Proxy) wantsBodies() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tallies) > 0 || len(p.faults) > 0
}
