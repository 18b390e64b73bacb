package rjqtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The server of this test binary, found once by NewQueue (see Addr).
var (
	serverOnce sync.Once
	serverAddr string
	serverErr  error
	serverSkip bool

	mu      sync.Mutex
	started *container // the container this binary started; Main removes it
)

// Addr returns the address ("host:port") of the RethinkDB server for tests, found on the
// first call in the test binary, the way this repository's own tests find theirs:
//
//  1. RJQ_TEST_ADDR, a server you run (a CI service, docker compose up);
//  2. else, when a Docker engine answers (DOCKER_HOST, default the local socket), a
//     container of RJQ_TEST_IMAGE (default rethinkdb:2.4) on a free port, pulled when the
//     engine does not have it. Call Main from TestMain to remove it when the tests end;
//     without Main, the next test binary on this host removes it.
//
// With neither, Addr skips tb with a message that says how to provide one. It fails tb
// when a container should have started and did not.
func Addr(tb testing.TB) string {
	tb.Helper()
	serverOnce.Do(findServer)
	switch {
	case serverSkip:
		tb.Skip("rjqtest: " + serverErr.Error())
	case serverErr != nil:
		tb.Fatalf("rjqtest: %v", serverErr)
	}
	return serverAddr
}

func findServer() {
	if addr := os.Getenv("RJQ_TEST_ADDR"); addr != "" {
		serverAddr = addr
		return
	}
	d, err := dockerClient()
	if err != nil {
		serverSkip = true
		serverErr = fmt.Errorf("no RethinkDB server for this test: set RJQ_TEST_ADDR=host:port (a server you run), or run a Docker engine (%v)", err)
		return
	}
	image := os.Getenv("RJQ_TEST_IMAGE")
	if image == "" {
		image = defaultImage
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := d.startContainer(ctx, image)
	if err != nil {
		serverErr = fmt.Errorf("a Docker engine answers but the %s container did not start (set RJQ_TEST_IMAGE to an image the engine has, or RJQ_TEST_ADDR to a server): %w", image, err)
		return
	}
	mu.Lock()
	started = c
	mu.Unlock()
	serverAddr = c.addr
}

// Main runs the package's tests, then removes the container Addr or NewQueue started, if
// any (see Cleanup). Use it as:
//
//	func TestMain(m *testing.M) { rjqtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the container Addr or NewQueue started, if any, for a TestMain of your
// own that has more to do than Main.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		started.remove()
		started = nil
	}
}

// notName is what RethinkDB does not allow in database names.
var notName = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// NewQueue returns a queue in a database of its own on the test server (see Addr), ready
// (its table and indexes made, with no init delay) and stopped, its database dropped, when
// tb ends. opts are the queue's options (nil: the defaults), but that DatabaseInitDelay
// is -1 unless set, and MasterInterval -1 (no Queue Master) unless set. Tests may run in
// parallel: each queue has its own database.
func NewQueue(tb testing.TB, opts *queue.Options) *queue.Queue {
	tb.Helper()
	addr := Addr(tb)
	var o queue.Options
	if opts != nil {
		o = *opts
	}
	if o.DatabaseInitDelay == 0 {
		o.DatabaseInitDelay = -1
	}
	if o.MasterInterval == 0 {
		o.MasterInterval = -1
	}
	name := notName.ReplaceAllString(tb.Name(), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	db := fmt.Sprintf("rjqtest_%s_%06x", strings.Trim(name, "_"), rand.Uint32()>>8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := queue.New(ctx, &queue.ConnectOptions{Address: addr, DB: db}, &o)
	if err != nil {
		tb.Fatalf("rjqtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := q.Stop(ctx); err != nil && !errors.Is(err, queue.ErrStopped) {
			tb.Errorf("rjqtest: stop the queue: %v", err)
		}
		dropDB(tb, addr, db)
	})
	if err := q.Ready(ctx); err != nil {
		tb.Fatalf("rjqtest: queue not ready: %v", err)
	}
	return q
}

// dropDB drops a test's database.
func dropDB(tb testing.TB, addr, db string) {
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		tb.Errorf("rjqtest: drop database %s: %v", db, err)
		return
	}
	defer s.Close()
	if _, err := r.DBDrop(db).RunWrite(s); err != nil && !strings.Contains(err.Error(), "does not exist") {
		tb.Errorf("rjqtest: drop database %s: %v", db, err)
	}
}
