package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// ordersTable is the user table the writer writes and the trigger watches; ordersIndex
// is its index on the time of each write, ordersTrigger the trigger's name.
const (
	ordersTable   = "orders"
	ordersIndex   = "updatedAt"
	ordersTrigger = "orders"
)

const (
	// writeTimeout bounds one write: past it, its answer is lost ("unknown").
	writeTimeout = 5 * time.Second
	// hotDocs is how many of the newest documents the updates go to, and insertShare the
	// share of writes that insert a document: each document gets a few versions, seconds
	// apart, while it is hot.
	hotDocs     = 500
	insertShare = 0.2
)

// order is one document of the orders table as the writer knows it.
type order struct {
	id   string
	v    int  // the last version number given to a write of it
	busy bool // a write of it is under way
}

// orderWrite is one write to make: the document and its version number.
type orderWrite struct {
	o *order
	v int
}

// runWriter inserts and updates documents of the orders table at rate writes a second
// until ctx ends, with writers writes under way at most. Each write sets the document's
// version v (one more than the writer's last for it) and updatedAt = r.now(), unless the
// table holds a later version already (a write whose answer was lost that landed after
// the next); its outcome is appended to the ledger (see writeOrder).
func runWriter(ctx context.Context, addr, db, ledgerPath string, rate float64, writers int) error {
	l, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	defer l.Close()
	opts := r.ConnectOpts{Address: addr, Database: db, MaxOpen: writers,
		Timeout: writeTimeout, ReadTimeout: 2 * writeTimeout, WriteTimeout: 2 * writeTimeout}
	first, err := connectUntil(ctx, opts)
	if err != nil {
		return err
	}
	s := &writerSession{s: first, opts: opts}
	defer s.close()
	ws := &writerState{l: l, s: s, db: db}
	mu, counts := &ws.mu, &ws.counts
	var docs []*order
	writes := make(chan orderWrite)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for w := range writes {
				ws.write(w)
			}
		})
	}
	defer func() {
		close(writes)
		wg.Wait()
		fmt.Printf("writer: %d acknowledged, %d unknown, %d superseded\n", counts[writeAcked], counts[writeUnknown], counts[writeNoop])
	}()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	logged := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		mu.Lock()
		w := nextWrite(&docs)
		if time.Since(logged) >= 30*time.Second {
			logged = time.Now()
			fmt.Printf("%s writer: %d documents, %d acknowledged, %d unknown, %d superseded\n",
				logged.Format("15:04:05"), len(docs), counts[writeAcked], counts[writeUnknown], counts[writeNoop])
		}
		mu.Unlock()
		select {
		case writes <- w:
		case <-ctx.Done():
			mu.Lock()
			w.o.busy = false
			mu.Unlock()
			return nil
		}
	}
}

// writerState is what the writer's goroutines share: the ledger and the counts by
// outcome, under mu (which also guards the documents), and the session.
type writerState struct {
	mu     sync.Mutex
	l      *ledgerFile
	s      *writerSession
	db     string
	counts [4]int
}

// write makes one write, with a "try" line in the ledger before it and its outcome after.
func (ws *writerState) write(w orderWrite) {
	ws.mu.Lock()
	err := ws.l.writeUnsynced("try", w.o.id, strconv.Itoa(w.v))
	ws.mu.Unlock()
	if err != nil {
		fmt.Println("writer: ledger:", err)
	}
	out, at := writeOrder(ws.s.get(), ws.db, w.o.id, w.v)
	if out == writeUnknown {
		ws.s.heal()
	}
	ws.mu.Lock()
	w.o.busy = false
	ws.counts[out]++
	err = ws.l.write(ledgerLine(out, w.o.id, w.v, at)...)
	ws.mu.Unlock()
	if err != nil {
		fmt.Println("writer: ledger:", err)
	}
}

// nextWrite picks the next write: a new document, or the next version of a hot one that
// no write is under way for. It marks the document busy.
func nextWrite(docs *[]*order) orderWrite {
	var o *order
	if len(*docs) > 0 && rand.Float64() >= insertShare {
		hot := (*docs)[max(0, len(*docs)-hotDocs):]
		for range 3 {
			if c := hot[rand.N(len(hot))]; !c.busy {
				o = c
				break
			}
		}
	}
	if o == nil {
		o = &order{id: fmt.Sprintf("o%07d", len(*docs)+1)}
		*docs = append(*docs, o)
	}
	o.v++
	o.busy = true
	return orderWrite{o: o, v: o.v}
}

// writerSession is the writer's session, replaced after a write whose answer was lost:
// a silent connection never answers again, and the driver would go on sending writes on
// it until its read timeout.
type writerSession struct {
	opts    r.ConnectOpts
	mu      sync.Mutex
	s       *r.Session
	healing bool
	healed  time.Time
	old     sync.WaitGroup // the replaced sessions being closed
}

func (ws *writerSession) get() *r.Session {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.s
}

// heal replaces the session with a new one, at most once a second; when the new one
// cannot connect (a partition), the old one stays.
func (ws *writerSession) heal() {
	ws.mu.Lock()
	if ws.healing || time.Since(ws.healed) < time.Second {
		ws.mu.Unlock()
		return
	}
	ws.healing = true
	ws.mu.Unlock()
	s, err := dial(ws.opts)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.healing, ws.healed = false, time.Now()
	if err != nil {
		return
	}
	old := ws.s
	ws.s = s
	ws.old.Go(func() { old.Close() }) // a silent connection holds Close until its timeout
}

// close closes the session, and waits for the replaced ones to close, for 10 s at most:
// the driver's Close of a silent connection waits for its read timeout, or for ever
// while a query on it does.
func (ws *writerSession) close() {
	s := ws.get()
	ws.old.Go(func() { s.Close() })
	closed := make(chan struct{})
	go func() {
		ws.old.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		fmt.Println("writer: the session's connections did not close within 10 s; leaving them")
	}
}

// dial connects within writeTimeout (rdb.Dial: the driver's handshake has no deadline of
// its own, and waits for ever on a silent network).
func dial(opts r.ConnectOpts) (*r.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return rdb.Dial(ctx, opts)
}

// connectUntil connects, again each second after a failure (a fault under way), until it
// succeeds or ctx ends.
func connectUntil(ctx context.Context, opts r.ConnectOpts) (*r.Session, error) {
	for {
		s, err := dial(opts)
		if err == nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}

// The outcomes of a write.
const (
	// writeAcked: the server answered that the version is the document's.
	writeAcked = iota
	// writeUnknown: the answer was lost; the version may or may not have landed.
	writeUnknown
	// writeNoop: the server answered that a later version was there already (an earlier
	// write whose answer was lost landed after this one was sent): no version written.
	writeNoop
	// writeTried: the write is under way (the ledger's "try" line, written before it, so
	// that a version the writer wrote just before it died is known).
	writeTried
)

// writeOrder is writeOrderOnce, given up (unknown) when it has not returned a second past
// its timeout: the driver waits for ever on a connection it dials while the network is
// silent (its handshake has no deadline), and the query's goroutine is left to it.
func writeOrder(s *r.Session, db, id string, v int) (int, time.Time) {
	type outcome struct {
		out int
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		out, at := writeOrderOnce(s, db, id, v)
		done <- outcome{out, at}
	}()
	select {
	case o := <-done:
		return o.out, o.at
	case <-time.After(writeTimeout + time.Second):
		return writeUnknown, time.Time{}
	}
}

// writeOrderOnce writes version v of the document id: {id, v, updatedAt: r.now()}, unless
// the table holds version v or a later one. It returns the outcome and, when
// acknowledged, the version's updatedAt as the server wrote it. A version v found there
// is this write's own (the driver sends a query again after a connection error):
// acknowledged, with the time of the try that landed.
func writeOrderOnce(s *r.Session, db, id string, v int) (int, time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	doc := map[string]any{"id": id, "v": v, ordersIndex: r.Now()}
	res, err := r.DB(db).Table(ordersTable).Get(id).Replace(func(old r.Term) r.Term {
		return r.Branch(old.Eq(nil).Or(old.Field("v").Lt(v)), doc, old)
	}, r.ReplaceOpts{ReturnChanges: "always"}).RunWrite(s, r.RunOpts{Context: ctx})
	if err != nil || len(res.Changes) != 1 {
		return writeUnknown, time.Time{}
	}
	now, _ := res.Changes[0].NewValue.(map[string]any)
	got, _ := now["v"].(float64)
	at, _ := now[ordersIndex].(time.Time)
	switch {
	case int(got) == v && !at.IsZero():
		return writeAcked, at
	case int(got) > v:
		return writeNoop, time.Time{}
	}
	return writeUnknown, time.Time{}
}

// ledgerLine is the writer's ledger line of a write's outcome: "ack ID V AT" (AT in Unix
// nanoseconds), "unknown ID V" or "noop ID V". A line "try ID V" comes before it.
func ledgerLine(outcome int, id string, v int, at time.Time) []string {
	switch outcome {
	case writeAcked:
		return []string{"ack", id, strconv.Itoa(v), strconv.FormatInt(at.UnixNano(), 10)}
	case writeNoop:
		return []string{"noop", id, strconv.Itoa(v)}
	}
	return []string{"unknown", id, strconv.Itoa(v)}
}
