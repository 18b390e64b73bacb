package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

var (
	errHelp     = errors.New("help")
	errNotFound = errors.New("not found")
)

// config is the global flags.
type config struct {
	addr, db, queue string
	user, password  string
	json            bool
	// tls asks for TLS with the system's roots; tlsCA for TLS trusting that PEM file.
	tls   bool
	tlsCA string
	// stderr receives the progress of long commands, apart from their output.
	stderr io.Writer
}

// parseGlobal parses the global flags, which may come before the command or after it,
// among the command's own: `rjq summary --queue mail` is `rjq --queue mail summary`. It
// returns the config and the command with its own arguments.
func parseGlobal(args []string, stderr io.Writer) (config, []string, error) {
	c := config{addr: os.Getenv("RJQ_ADDR"), user: os.Getenv("RJQ_USER"), password: os.Getenv("RJQ_PASSWORD"),
		tls: os.Getenv("RJQ_TLS") == "1", tlsCA: os.Getenv("RJQ_TLS_CA"), stderr: stderr}
	if c.addr == "" {
		c.addr = "localhost:28015"
	}
	fs := flag.NewFlagSet("rjq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", c.addr, "RethinkDB driver address host:port (env RJQ_ADDR)")
	fs.StringVar(&c.db, "db", queue.DefaultDB, "database")
	fs.StringVar(&c.queue, "queue", queue.DefaultName, "queue (table) name")
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts")
	fs.BoolVar(&c.tls, "tls", c.tls, "connect with TLS, trusting the system's roots (env RJQ_TLS=1)")
	fs.StringVar(&c.tlsCA, "tls-ca", c.tlsCA, "connect with TLS, trusting the CA certificates of this PEM file (env RJQ_TLS_CA)")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	parse := func(args []string) error {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return err
	}
	if err := parse(args); err != nil {
		return c, nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return c, rest, nil
	}
	own, globals := splitGlobal(fs, rest[1:])
	if err := parse(globals); err != nil {
		return c, nil, err
	}
	return c, append(rest[:1:1], own...), nil
}

// splitGlobal takes the flags of fs out of a command's arguments (up to a "--"), each
// with its value, and returns the command's own arguments and the flags taken.
func splitGlobal(fs *flag.FlagSet, args []string) (own, globals []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(own, args[i:]...), globals
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || f == nil {
			own = append(own, a)
			continue
		}
		globals = append(globals, a)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i+1 < len(args) {
			i++
			globals = append(globals, args[i])
		}
	}
	return own, globals
}

// hostPort splits the address flag.
func (c config) hostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(c.addr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return "", 0, usagef("--addr %q: want host:port", c.addr)
	}
	return host, port, nil
}

// session dials the server, failing fast with a message that says what to check.
func (c config) session(ctx context.Context) (*r.Session, error) {
	host, port, err := c.hostPort()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	s, err := r.Connect(r.ConnectOpts{
		Address: net.JoinHostPort(host, strconv.Itoa(port)), Username: c.user, Password: c.password,
		Timeout: 5 * time.Second, TLSConfig: tlsConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot reach RethinkDB at %s (is it running? set --addr or RJQ_ADDR): %w", c.addr, err)
	}
	return s, nil
}

// tlsConfig is the TLS the flags ask for: nil for none.
func (c config) tlsConfig() (*tls.Config, error) {
	if c.tlsCA == "" {
		if c.tls {
			return &tls.Config{MinVersion: tls.VersionTLS12}, nil
		}
		return nil, nil
	}
	pem, err := os.ReadFile(c.tlsCA)
	if err != nil {
		return nil, usagef("--tls-ca: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, usagef("--tls-ca %s: no PEM certificate in the file", c.tlsCA)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// openNoArgs opens the queue (with its changefeed when watching) for a command that takes
// no arguments, refusing any.
func (c config) openNoArgs(ctx context.Context, command string, args []string, watching bool) (*queue.Queue, func(), error) {
	if len(args) > 0 {
		return nil, nil, usagef("%s takes no arguments, got %q (global flags such as --queue may come before or after the command)", command, strings.Join(args, " "))
	}
	if watching {
		return c.openWatching(ctx)
	}
	return c.open(ctx)
}

// open returns the queue named by the flags, after checking that its table exists and is
// a queue's: rjq never creates a database or a table.
func (c config) open(ctx context.Context) (*queue.Queue, func(), error) {
	return c.openQueue(ctx, false)
}

// openWatching is open with the queue's changefeed on, for its events.
func (c config) openWatching(ctx context.Context) (*queue.Queue, func(), error) {
	return c.openQueue(ctx, true)
}

func (c config) openQueue(ctx context.Context, feed bool) (*queue.Queue, func(), error) {
	q, _, done, err := c.openWithSession(ctx, feed)
	return q, done, err
}

// openWithSession is openQueue that also returns the queue's session, for the reads
// that go to the table itself.
func (c config) openWithSession(ctx context.Context, feed bool) (*queue.Queue, *r.Session, func(), error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := c.checkQueue(ctx, s); err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: s, DB: c.db}, &queue.Options{
		Name: c.queue, DatabaseInitDelay: -1, MasterInterval: -1, NoChangeFeed: !feed, Heartbeat: -1,
		EventBuffer: 4096,
	})
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	if err := q.Ready(ctx); err != nil {
		_ = q.Stop(context.Background())
		s.Close()
		return nil, nil, nil, err
	}
	return q, s, func() { _ = q.Stop(context.Background()); s.Close() }, nil
}

func (c config) checkQueue(ctx context.Context, s *r.Session) error {
	var dbs []string
	if err := readAll(ctx, s, r.DBList(), &dbs); err != nil {
		return err
	}
	if !slices.Contains(dbs, c.db) {
		return usagef("no database %q at %s (see --db)", c.db, c.addr)
	}
	var tables []string
	if err := readAll(ctx, s, r.DB(c.db).TableList(), &tables); err != nil {
		return err
	}
	if !slices.Contains(tables, c.queue) {
		return usagef("no queue %q in database %q (see --queue, or rjq queues)", c.queue, c.db)
	}
	var indexes []string
	if err := readAll(ctx, s, r.DB(c.db).Table(c.queue).IndexList(), &indexes); err != nil {
		return err
	}
	if !slices.Contains(indexes, dbinit.IndexInactivePriorityDateCreated) {
		return usagef("table %q of database %q is not a job queue (it has no %s index)", c.queue, c.db, dbinit.IndexInactivePriorityDateCreated)
	}
	return nil
}

func readAll(ctx context.Context, s *r.Session, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	return cur.All(dst)
}
