// Package testserver provides the RethinkDB server that integration tests run against.
//
// Get looks for a server in this order and uses the first that works:
//
//  1. RJQ_TEST_ADDR=host:port: a server started by CI or by the user, used as is.
//  2. A container started with testcontainers, when a Docker engine answers on DOCKER_HOST
//     (default unix:///var/run/docker.sock): rethinkdb:2.4, or the image RJQ_TEST_IMAGE
//     names. The module in dockerrun/ (found beside this package's source) starts it, run
//     with go run, so that testcontainers stays out of this module's go.mod. When the
//     container does not start (no image to be had, say), one line says why and the next
//     server is used.
//  3. reqlite, a RethinkDB-compatible server in JavaScript, installed with npm from the kit
//     in testdata/reqlite when node and npm are on PATH.
//
// RJQ_TEST_SERVER=docker makes a container the only choice (a failure to start it fails
// the tests); RJQ_TEST_SERVER=reqlite skips the container. With no server the tests skip.
// The line naming the server used goes to standard error (go test -v shows it). A server started here belongs to one test binary and
// is stopped by Main when the binary's tests end.
//
// reqlite lacks some RethinkDB features (see testdata/reqlite/README.md), so tests that need
// them call SkipOnReqlite. For a server given by RJQ_TEST_ADDR, reqlite is detected by its
// empty system tables; RJQ_TEST_REQLITE=1 (or 0) states it instead, as CI does.
package testserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Kind tells where the server came from, which decides what it supports and who stops it.
type Kind string

// The places a server can come from.
const (
	Env       Kind = "env"       // RJQ_TEST_ADDR; not started or stopped here
	Container Kind = "container" // rethinkdb:2.4 started with testcontainers
	Reqlite   Kind = "reqlite"   // reqlite started from testdata/reqlite
)

// Server describes the server the tests use.
type Server struct {
	Addr    string // host:port
	Host    string
	Port    int
	Kind    Kind
	reqlite bool
}

// IsReqlite reports whether the server is reqlite, which lacks or breaks some features.
func (s Server) IsReqlite() bool { return s.reqlite }

// skipError means no server can be had here, which skips tests instead of failing them.
type skipError string

func (e skipError) Error() string { return string(e) }

var (
	once     sync.Once
	found    Server
	foundErr error

	mu   sync.Mutex
	stop func() // stops the server this binary started; nil when it started none
)

// Main runs the package's tests and then stops any server this binary started. Use as:
//
//	func TestMain(m *testing.M) { testserver.Main(m) }
//
// Without it a reqlite server still dies with the binary (on Linux) and a container is
// removed by its runner, but only after the binary has gone.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the server this binary started, if any, for a TestMain that does more than
// Main.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if stop != nil {
		stop()
		stop = nil
	}
}

// Get returns the server, finding or starting it on the first call in the binary. It skips
// tb when no server can be had and fails tb when starting one that should work fails.
func Get(tb testing.TB) Server {
	tb.Helper()
	once.Do(func() { found, foundErr = find() })
	var skip skipError
	switch {
	case errors.As(foundErr, &skip):
		tb.Skip(skip)
	case foundErr != nil:
		tb.Fatalf("testserver: %v", foundErr)
	}
	return found
}

// SkipOnReqlite skips tb when the server is reqlite; why says what reqlite lacks or breaks.
func SkipOnReqlite(tb testing.TB, why string) {
	tb.Helper()
	if Get(tb).IsReqlite() {
		tb.Skipf("reqlite: %s", why)
	}
}

// notName matches what RethinkDB does not allow in database names.
var notName = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// DB returns a database name no other test uses, so tests can run in parallel on one
// server, and drops that database when tb ends. It does not create the database.
func DB(tb testing.TB) string {
	tb.Helper()
	s := Get(tb)
	name := notName.ReplaceAllString(tb.Name(), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("t_%s_%06x", name, rand.Uint32()>>8)
	tb.Cleanup(func() {
		sess, err := connect(s.Addr)
		if err != nil {
			tb.Errorf("testserver: drop database %s: %v", name, err)
			return
		}
		defer sess.Close()
		_, err = r.DBDrop(name).RunWrite(sess)
		if err != nil && !strings.Contains(err.Error(), "does not exist") {
			tb.Errorf("testserver: drop database %s: %v", name, err)
		}
	})
	return name
}

// Session opens a session to the server that is closed when tb ends.
func Session(tb testing.TB) *r.Session {
	tb.Helper()
	sess, err := connect(Get(tb).Addr)
	if err != nil {
		tb.Fatalf("testserver: %v", err)
	}
	tb.Cleanup(func() { sess.Close() })
	return sess
}

func connect(addr string) (*r.Session, error) {
	sess, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return sess, nil
}

const howTo = "no RethinkDB server for integration tests: set RJQ_TEST_ADDR=host:port " +
	"(for example `docker compose up -d rethinkdb` and RJQ_TEST_ADDR=127.0.0.1:28015), " +
	"or run a Docker engine (a rethinkdb:2.4 container is then started; RJQ_TEST_IMAGE names another image), " +
	"or install Node.js with npm so the reqlite kit in testdata/reqlite can start"

// The values of RJQ_TEST_SERVER, which chooses where the server comes from when
// RJQ_TEST_ADDR is not set.
const (
	chooseAny     = ""        // a container when Docker answers and it starts, else reqlite
	chooseDocker  = "docker"  // a container, or fail
	chooseReqlite = "reqlite" // reqlite, even when Docker answers
)

// find finds or starts the server: RJQ_TEST_ADDR's, else a container when a Docker engine
// answers, else reqlite. A container that does not start is noted on standard error and
// reqlite is used instead, unless RJQ_TEST_SERVER=docker asks for the container only.
func find() (Server, error) {
	if addr := os.Getenv("RJQ_TEST_ADDR"); addr != "" {
		return fromEnv(addr)
	}
	choice := os.Getenv("RJQ_TEST_SERVER")
	var start func() (Server, func(), error)
	switch choice {
	case chooseAny, chooseReqlite:
		start = startReqlite
		if choice == chooseAny && dockerUp() {
			start = func() (Server, func(), error) {
				s, halt, err := startContainer()
				if err != nil {
					note("Docker answers but the %s container did not start (%s); using reqlite instead (RJQ_TEST_SERVER=docker makes this an error)", image(), reason(err))
					return startReqlite()
				}
				return s, halt, nil
			}
		}
	case chooseDocker:
		if !dockerUp() {
			return Server{}, errors.New("RJQ_TEST_SERVER=docker but no Docker engine answers on " + dockerHost())
		}
		start = startContainer
	default:
		return Server{}, fmt.Errorf("RJQ_TEST_SERVER=%q: want docker, reqlite, or nothing (a container when Docker answers, else reqlite)", choice)
	}
	s, halt, err := start()
	if err != nil {
		return Server{}, err
	}
	note("%s", s.describe())
	mu.Lock()
	stop = halt
	mu.Unlock()
	return s, nil
}

// describe says which server the tests use, for the line find prints.
func (s Server) describe() string {
	switch {
	case s.Kind == Container && s.reqlite:
		return fmt.Sprintf("integration tests use a %s container at %s (reqlite inside)", image(), s.Addr)
	case s.Kind == Container:
		return fmt.Sprintf("integration tests use a %s container at %s", image(), s.Addr)
	}
	return fmt.Sprintf("integration tests use %s at %s", s.Kind, s.Addr)
}

// note prints one line to standard error, which go test shows with -v or on a failure.
func note(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testserver: "+format+"\n", args...)
}

func fromEnv(addr string) (Server, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return Server{}, fmt.Errorf("RJQ_TEST_ADDR=%q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return Server{}, fmt.Errorf("RJQ_TEST_ADDR=%q: bad port: %w", addr, err)
	}
	s := Server{Addr: addr, Host: host, Port: port, Kind: Env}
	if v := os.Getenv("RJQ_TEST_REQLITE"); v != "" {
		s.reqlite, err = strconv.ParseBool(v)
		if err != nil {
			return Server{}, fmt.Errorf("RJQ_TEST_REQLITE=%q: %w", v, err)
		}
		// Connecting now turns a wrong address into one clear failure instead of one per test.
		sess, err := connect(addr)
		if err != nil {
			return Server{}, fmt.Errorf("RJQ_TEST_ADDR: %w", err)
		}
		sess.Close()
		return s, nil
	}
	s.reqlite, err = probeReqlite(addr)
	if err != nil {
		return Server{}, fmt.Errorf("RJQ_TEST_ADDR: %w (set RJQ_TEST_REQLITE to skip the probe)", err)
	}
	return s, nil
}

// probeReqlite reports whether the server at addr is reqlite: it has a rethinkdb database
// whose system tables are empty, while a real server always lists itself in server_status.
func probeReqlite(addr string) (bool, error) {
	sess, err := connect(addr)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	var n int
	if err := r.DB("rethinkdb").Table("server_status").Count().ReadOne(&n, sess); err != nil {
		return false, fmt.Errorf("probe for reqlite: %w", err)
	}
	return n == 0, nil
}
