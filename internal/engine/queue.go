package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Queue is the running queue behind queue.Queue: its state, its background services and
// its processor. It is safe for concurrent use.
type Queue struct {
	cfg Config
	id  string
	// session runs every query: the caller's Config.Session, or the Conn dialed here
	// (conn), which replaces its connections when they go silent.
	session r.QueryExecutor
	conn    *rdb.Conn
	// db is the queue's table in the storage layer: every query goes through it.
	db  *rdb.Table
	log *slog.Logger
	out Outlet

	// ready is closed when the database assertion has finished; readyErr is its outcome.
	ready    chan struct{}
	readyErr error

	// bg runs the background services (set-up, the Master's loops, pauses finishing in
	// the background); Stop cancels it first. feed runs the changefeed, which Stop keeps
	// open until the running jobs are done, so that a cancel from another queue still
	// reaches them. The processor is the third service (see processor.svc).
	bg   *lifecycle.Service
	feed *lifecycle.Service
	// width is the changefeed's: the worker's feed or the whole one (feedwidth.go).
	width feedWidth
	// narrowAfter, when positive, replaces narrowAfter (feedwidth.go), for tests.
	narrowAfter time.Duration

	mu sync.Mutex
	// stopped refuses new calls from Stop on; closed refuses the job methods too, once
	// running handlers are done and the connection is about to close.
	stopped bool
	closed  bool
	// down is closed once a shutdown has finished: a Stop that finds one begun waits for
	// it.
	down        chan struct{}
	ops         sync.WaitGroup // calls in progress, waited for by Stop
	concurrency int
	jobOptions  job.Options
	paused      bool
	// pausedGlobal is set when the pause is global.
	pausedGlobal bool
	// resumed is closed by the resume that ends the current pause; nil when not paused.
	resumed chan struct{}
	proc    *processor.Processor // nil until Process
	// removed remembers the jobs this queue deleted lately (see noteRemovals).
	removed map[string]time.Time
	// exactBelow is the table size below which Summary counts every job (see
	// Summary): rdb.ExactBelowJobs, but for tests.
	exactBelow int
	// deadlineIndex is set once this queue has made sure of the table's index of start
	// deadlines (see ensureDeadlineIndex).
	deadlineIndex atomic.Bool
	// deadlineIndexSeen is set while the table is known to have that index: the Master's
	// expiry reads it only then (see ExpireDue). Until then, deadlineIndexCheck is when
	// the Master next looks for it (Unix nanoseconds; 0: at its next tick).
	// workflows is set once the table is known to have jobs with parents (until then,
	// workflowsCheck is when to look for blocked jobs again); flow settles the children
	// of jobs that finish (see workflow.go).
	workflows      atomic.Bool
	workflowsCheck atomic.Int64
	flow           flowMover
	// sequenceIndex is set once this queue has made sure of the table's index of
	// sequences.
	sequenceIndex atomic.Bool
	// tailsWaited is set once an add of this queue waited for the index of sequences to
	// be built, to read the last job of each sequence (sequenceTails).
	tailsWaited atomic.Bool
	// turnsSide is set once this queue has made sure of the side table that holds the
	// turns of groups (groupTurns); turnsAgain is when adds take turns again after they
	// could not (Unix nanoseconds; 0: now).
	turnsSide          atomic.Bool
	turnsAgain         atomic.Int64
	deadlineIndexSeen  atomic.Bool
	deadlineIndexCheck atomic.Int64
	// triggers are the triggers this process declared (triggers.go).
	triggers triggerSet
}

// stopTimeout bounds the driver's STOP of a query whose context ended (see connectOpts).
const stopTimeout = 5 * time.Second

// dialTimeout bounds New's dial when its context has no deadline.
const dialTimeout = 10 * time.Second

// Outlet receives the queue's events: package queue's broker. Close follows the last
// event, once the queue has stopped.
type Outlet interface {
	Publish(Event)
	Close()
}

// New dials the server cfg names (unless cfg has a Session) and returns the queue; Start
// starts it.
func New(ctx context.Context, cfg Config, out Outlet) (*Queue, error) {
	var session r.QueryExecutor = cfg.Session
	var conn *rdb.Conn
	if cfg.Session == nil {
		opts := connectOpts(cfg)
		s, err := dial(ctx, cfg, opts)
		if err != nil {
			return nil, err
		}
		conn = rdb.NewConn(s, opts, cfg.Logger)
		session = conn
	}
	host, _ := os.Hostname()
	q := &Queue{
		cfg:         cfg,
		id:          strings.Join([]string{host, cfg.DB, cfg.Name, strconv.Itoa(os.Getpid()), uuid.NewString()}, ":"),
		session:     session,
		conn:        conn,
		ready:       make(chan struct{}),
		down:        make(chan struct{}),
		concurrency: cfg.Concurrency,
		jobOptions:  cfg.JobOptions,
		out:         out,
		removed:     make(map[string]time.Time),
		exactBelow:  rdb.ExactBelowJobs,
	}
	q.db = &rdb.Table{Session: session, DB: cfg.DB, Name: cfg.Name, RunOpts: cfg.RunOpts,
		QueueID: q.id, LimitJobLogs: cfg.LimitJobLogs}
	q.log = cfg.Logger.With("queue", q.id)
	q.bg, q.feed = lifecycle.New(), lifecycle.New()
	return q, nil
}

// Start starts the queue's background work: the database assertion, then the changefeed,
// and the Queue Master's services.
func (q *Queue) Start() {
	q.bg.Go(q.initialize)
	if q.cfg.Master() {
		q.masterServices().Start(q.bg)
	}
}

// connectOpts are the driver's options for the server cfg names.
func connectOpts(cfg Config) r.ConnectOpts {
	opts := r.ConnectOpts{
		Address:   net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)),
		Addresses: cfg.Addresses,
		Database:  cfg.DB,
		Username:  cfg.Username,
		Password:  cfg.Password,
		Timeout:   dialTimeout,
		TLSConfig: cfg.TLS,
		// The driver stops a query whose context ended with a STOP that waits for its
		// answer under these timeouts, for ever without them: on a connection gone
		// silent, that held the query (and the session's lock) for good. Every query of
		// the queue has a context of its own, so they bound nothing else.
		ReadTimeout:  stopTimeout,
		WriteTimeout: stopTimeout,
	}
	if len(cfg.Addresses) > 0 {
		opts.Address = ""
	}
	return opts
}

// dial connects with opts, made from cfg, or fails with an error wrapping ErrConnect.
func dial(ctx context.Context, cfg Config, opts r.ConnectOpts) (*r.Session, error) {
	s, err := rdb.Dial(ctx, opts)
	switch {
	case err == nil:
		return s, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, cfg.Addr(), ctx.Err())
	}
	return nil, fmt.Errorf("%w at %s (is a RethinkDB 2.4 server running there? to use another, set ConnectOptions.Address to its host:port, or pass queue.ParseURL(\"rethinkdb://host:port/db\")): %w", ErrConnect, cfg.Addr(), err)
}

// tableTarget is the queue's table as dbinit asserts it.
func (q *Queue) tableTarget() dbinit.Target {
	return dbinit.Target{Session: q.session, DB: q.cfg.DB, Table: q.cfg.Name, RunOpts: q.cfg.RunOpts,
		Shards: q.cfg.Shards, Replicas: q.cfg.Replicas}
}

// initialize asserts the database after the init delay, opens the changefeed, and then
// marks the queue ready.
func (q *Queue) initialize(ctx context.Context) {
	defer close(q.ready)
	delay := dbinit.Delay(q.cfg.InitDelay, q.cfg.Master(), dbinit.RandomDelay())
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		q.readyErr = ErrStopped
		return
	}
	err := dbinit.Assert(ctx, q.tableTarget())
	if ctx.Err() != nil {
		q.readyErr = ErrStopped
		return
	}
	if err != nil {
		q.readyErr = fmt.Errorf("queue %s: prepare database %s: %w", q.cfg.Name, q.cfg.DB, err)
		q.log.Error("database assertion failed", "err", err)
		q.emit(Event{Type: EventError, Err: q.readyErr})
		return
	}
	q.warnOfOtherConfig(ctx)
	if q.cfg.ChangeFeed {
		if err := q.subscribeFirst(ctx); ctx.Err() != nil {
			q.readyErr = ErrStopped
			return
		} else if err != nil {
			q.readyErr = err
			q.log.Error("opening the changefeed failed", "err", err)
			q.emit(Event{Type: EventError, Err: q.readyErr})
			return
		}
	}
	q.log.Debug("ready")
	q.emit(Event{Type: EventReady})
}

// warnOfOtherConfig logs a warning when the table, made before, has other shards or
// replicas than Options asks for: the queue never reconfigures a table.
func (q *Queue) warnOfOtherConfig(ctx context.Context) {
	if q.cfg.Shards == 0 && q.cfg.Replicas == 0 {
		return
	}
	var conf struct {
		Shards []struct {
			Replicas []string `rethinkdb:"replicas"`
		} `rethinkdb:"shards"`
	}
	if err := q.db.ReadOne(ctx, q.db.Term().Config(), &conf); err != nil || len(conf.Shards) == 0 {
		return // a server without the system tables (reqlite) says nothing
	}
	shards, replicas := len(conf.Shards), len(conf.Shards[0].Replicas)
	if (q.cfg.Shards > 0 && shards != q.cfg.Shards) || (q.cfg.Replicas > 0 && replicas != q.cfg.Replicas) {
		q.log.Warn("the table exists with another configuration, which the queue leaves as it is",
			"shards", shards, "replicas", replicas, "wantShards", q.cfg.Shards, "wantReplicas", q.cfg.Replicas)
	}
}

// Ready is queue.Queue.Ready, whose doc says what it does.
func (q *Queue) Ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	stopped := q.stopped
	q.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	return q.ready0(ctx)
}

// ready0 waits for the database assertion, without the checks of a call.
func (q *Queue) ready0(ctx context.Context) error {
	select {
	case <-q.ready:
		return q.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// begin starts a call: it fails once the queue is stopped, waits until the queue is ready,
// and registers the call so that Stop waits for it. The caller must call the returned
// function when done.
func (q *Queue) begin(ctx context.Context) (end func(), err error) {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return nil, ErrStopped
	}
	q.ops.Add(1)
	q.mu.Unlock()
	if err := ctx.Err(); err != nil {
		q.ops.Done()
		return nil, err
	}
	if err := q.ready0(ctx); err != nil {
		q.ops.Done()
		return nil, err
	}
	return q.ops.Done, nil
}

// beginJob starts a call of a job's own method (Update, AddLog, UpdateProgress). Those stay
// open while Stop waits for running handlers, which make them.
func (q *Queue) beginJob(ctx context.Context) error {
	q.mu.Lock()
	closed := q.closed
	q.mu.Unlock()
	if closed {
		return ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return q.ready0(ctx)
}

// Config returns the queue's configuration.
func (q *Queue) Config() Config { return q.cfg }

// ID is queue.Queue.ID, whose doc says what it does.
func (q *Queue) ID() string { return q.id }

// Log returns the queue's logger.
func (q *Queue) Log() *slog.Logger { return q.log }

// Concurrency is queue.Queue.Concurrency, whose doc says what it does.
func (q *Queue) Concurrency() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.concurrency
}

// SetConcurrency is queue.Queue.SetConcurrency, whose doc says what it does.
func (q *Queue) SetConcurrency(n int) error {
	if n < 1 {
		err := fmt.Errorf("%w: concurrency %d: must be at least 1", ErrInvalidOption, n)
		q.emit(Event{Type: EventError, Err: err})
		return err
	}
	q.mu.Lock()
	q.concurrency = n
	q.mu.Unlock()
	q.wakeProcessing()
	return nil
}

// JobOptions is queue.Queue.JobOptions, whose doc says what it does.
func (q *Queue) JobOptions() job.Options {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.jobOptions
}

// SetJobOptions is queue.Queue.SetJobOptions, whose doc says what it does.
func (q *Queue) SetJobOptions(opts job.Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: job options: %w", ErrInvalidOption, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobOptions = opts.WithDefaults()
	return nil
}

// stalled replaces the session's connections when the queue dialed it (see rdb.Conn); a
// session of the caller's is the caller's to mend.
func (q *Queue) stalled() {
	if q.conn != nil {
		q.conn.Stalled()
	}
}

// public is err as the caller's API gives it (see Config.Public).
func (q *Queue) public(err error) error {
	if err == nil || q.cfg.Public == nil {
		return err
	}
	return q.cfg.Public(err)
}
