package queue

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/broker"
	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Queue is a job queue backed by one RethinkDB table. It is safe for concurrent use.
type Queue struct {
	cfg     config
	id      string
	session *r.Session
	// db is the queue's table in the storage layer: every query goes through it.
	db     *rdb.Table
	log    *slog.Logger
	events *broker.Broker[Event]

	// ready is closed when the database assertion has finished; readyErr is its outcome.
	ready    chan struct{}
	readyErr error

	// bg runs the background services (set-up, the Master's loops, pauses finishing in
	// the background); Stop cancels it first. feed runs the changefeed, which Stop keeps
	// open until the running jobs are done, so that a cancel from another queue still
	// reaches them. The processor is the third service (see processor.svc).
	bg   *lifecycle.Service
	feed *lifecycle.Service

	mu sync.Mutex
	// stopped refuses new calls from Stop on; closed refuses the job methods too, once
	// running handlers are done and the connection is about to close.
	stopped     bool
	closed      bool
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
}

// dialTimeout bounds New's dial when its context has no deadline.
const dialTimeout = 10 * time.Second

// New connects to RethinkDB and returns a queue. nil options mean the defaults. It dials
// now and fails at once, with an error wrapping ErrConnect that names the address, when no
// server answers; the database, table and indexes are then asserted in the background,
// after the init delay (see Options.DatabaseInitDelay). Every method waits for that; Ready
// waits for it alone.
func New(ctx context.Context, cxn *ConnectOptions, opts *Options) (*Queue, error) {
	cfg, err := resolve(cxn, opts)
	if err != nil {
		return nil, err
	}
	session := cfg.session
	if session == nil {
		if session, err = dial(ctx, cfg); err != nil {
			return nil, err
		}
	}
	host, _ := os.Hostname()
	q := &Queue{
		cfg:         cfg,
		id:          strings.Join([]string{host, cfg.db, cfg.name, strconv.Itoa(os.Getpid()), uuid.NewString()}, ":"),
		session:     session,
		ready:       make(chan struct{}),
		concurrency: cfg.concurrency,
		jobOptions:  cfg.jobOptions,
		removed:     make(map[string]time.Time),
		exactBelow:  rdb.ExactBelowJobs,
	}
	q.db = &rdb.Table{Session: session, DB: cfg.db, Name: cfg.name, RunOpts: cfg.runOpts,
		QueueID: q.id, LimitJobLogs: cfg.limitJobLogs}
	q.log = cfg.logger.With("queue", q.id)
	q.events = broker.New[Event](cfg.eventBuffer, func(total uint64) {
		q.log.Warn("an Events reader is behind: events dropped; read faster or raise Options.EventBuffer",
			"droppedByThisReader", total)
	})
	q.bg, q.feed = lifecycle.New(), lifecycle.New()
	q.bg.Go(q.initialize)
	if cfg.master() {
		q.masterServices().Start(q.bg)
	}
	return q, nil
}

// dial connects to the server cfg names, or fails with an error wrapping ErrConnect.
func dial(ctx context.Context, cfg config) (*r.Session, error) {
	opts := r.ConnectOpts{
		Address:   net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)),
		Addresses: cfg.addresses,
		Database:  cfg.db,
		Username:  cfg.username,
		Password:  cfg.password,
		Timeout:   dialTimeout,
		TLSConfig: cfg.tls,
	}
	if len(cfg.addresses) > 0 {
		opts.Address = ""
	}
	s, err := rdb.Dial(ctx, opts)
	switch {
	case err == nil:
		return s, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, cfg.addr(), ctx.Err())
	}
	return nil, fmt.Errorf("%w at %s (is the server running? start one with `docker compose up -d`, or set ConnectOptions.Host and Port): %w", ErrConnect, cfg.addr(), err)
}

// tableTarget is the queue's table as dbinit asserts it.
func (q *Queue) tableTarget() dbinit.Target {
	return dbinit.Target{Session: q.session, DB: q.cfg.db, Table: q.cfg.name, RunOpts: q.cfg.runOpts,
		Shards: q.cfg.shards, Replicas: q.cfg.replicas}
}

// initialize asserts the database after the init delay, opens the changefeed, and then
// marks the queue ready.
func (q *Queue) initialize(ctx context.Context) {
	defer close(q.ready)
	delay := dbinit.Delay(q.cfg.initDelay, q.cfg.master(), dbinit.RandomDelay())
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
		q.readyErr = fmt.Errorf("queue %s: prepare database %s: %w", q.cfg.name, q.cfg.db, err)
		q.log.Error("database assertion failed", "err", err)
		q.emit(Event{Type: EventError, Err: q.readyErr})
		return
	}
	q.warnOfOtherConfig(ctx)
	if q.cfg.changeFeed {
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
	if q.cfg.shards == 0 && q.cfg.replicas == 0 {
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
	if (q.cfg.shards > 0 && shards != q.cfg.shards) || (q.cfg.replicas > 0 && replicas != q.cfg.replicas) {
		q.log.Warn("the table exists with another configuration, which the queue leaves as it is",
			"shards", shards, "replicas", replicas, "wantShards", q.cfg.shards, "wantReplicas", q.cfg.replicas)
	}
}

// Ready waits until the queue's database, table and indexes are in place, and returns the
// error that prevented it, if any.
//
// It returns ctx's error when ctx has ended, even if the queue is ready, and ErrStopped
// once the queue is stopped.
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

// Name returns the queue's name, which is its table's name.
func (q *Queue) Name() string { return q.cfg.name }

// ID returns the queue's id, "hostname:db:name:pid:uuid", written into every job it changes.
func (q *Queue) ID() string { return q.id }

// Host returns the RethinkDB host the queue was given.
func (q *Queue) Host() string { return q.cfg.host }

// Port returns the RethinkDB port the queue was given.
func (q *Queue) Port() int { return q.cfg.port }

// DB returns the queue's database name.
func (q *Queue) DB() string { return q.cfg.db }

// ChangeFeed reports whether the queue follows the table's changefeed.
func (q *Queue) ChangeFeed() bool { return q.cfg.changeFeed }

// Master reports whether the queue is a Queue Master.
func (q *Queue) Master() bool { return q.cfg.master() }

// MasterInterval returns the review interval; negative when the queue is not a master.
func (q *Queue) MasterInterval() time.Duration { return q.cfg.masterInterval }

// LimitJobLogs returns how many log entries a job keeps; negative for no limit.
func (q *Queue) LimitJobLogs() int { return q.cfg.limitJobLogs }

// RemoveFinishedJobs returns how long finished jobs are kept: KeepFinishedJobs (negative),
// RemoveFinishedJobsImmediately, or a retention period.
func (q *Queue) RemoveFinishedJobs() time.Duration { return q.cfg.removeFinished }

// Concurrency returns how many jobs the queue runs at once.
func (q *Queue) Concurrency() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.concurrency
}

// SetConcurrency changes how many jobs the queue runs at once; n must be at least 1.
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

// JobOptions returns the options CreateJob gives new jobs.
func (q *Queue) JobOptions() job.Options {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.jobOptions
}

// SetJobOptions replaces the options CreateJob gives new jobs; every field is used as
// given, except a zero Priority or Timeout, which mean Normal and job.DefaultTimeout.
// Invalid options are refused with an error and change nothing.
func (q *Queue) SetJobOptions(opts job.Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: job options: %w", ErrInvalidOption, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobOptions = opts.WithDefaults()
	return nil
}
