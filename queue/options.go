package queue

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// ConnectOptions say which RethinkDB server and database a queue uses. The zero value
// means localhost:28015, database rjqJobQueue, user admin with no password. Name the
// server with Address ("db1:28015"), or Host and Port, or Addresses for several
// servers of a cluster; ParseURL reads all of it from one URL (a RETHINKDB_URL setting).
type ConnectOptions struct {
	// Address is the server's "host:port" (the port may be left out: 28015). Set it or
	// Host and Port, not both.
	Address string
	Host    string
	Port    int
	DB      string
	// Username and Password are the RethinkDB account (default admin, no password).
	Username string
	Password string
	// Session is an existing driver session to use instead of dialling (the original's
	// "Connection Driver"). The queue does not close it. Host and Port are then only
	// reported by Queue.Host and Queue.Port. Give it no ReadTimeout: the changefeed waits
	// on it for as long as the table is quiet, and the driver would end the feed.
	Session *r.Session
	// Addresses are the host:port driver addresses of several servers of one RethinkDB
	// cluster; the queue spreads its queries over them and keeps working while one is
	// down. When set, Host and Port are not dialled (they are still what Queue.Host and
	// Queue.Port report, the first address by default).
	Addresses []string
	// TLS, when not nil, encrypts the connections with this configuration (RethinkDB's
	// --tls-* options on the server side).
	TLS *tls.Config
}

// Options configure a queue. The zero value of every field means its documented default;
// where a negative value means "off", it says so.
type Options struct {
	// Name is the queue's name and its table's name (default "rjqJobList"). Letters, digits,
	// '_' and '-' only.
	Name string
	// DatabaseInitDelay is the fixed part of the wait before the queue asserts its database,
	// table and indexes (default 1s; negative: none). A random 0–1s is always added, so that
	// queues started together do not create the same table twice; a Queue Master skips the
	// fixed part.
	DatabaseInitDelay time.Duration
	// QueryRunOptions are the run options of every query (default ReadMode "majority").
	// Its Context field is ignored: each call's context is used. Writes are sent without
	// its ReadMode: a write runs on the primary, which applies each change (and its guard)
	// to the document's latest version whatever the read mode, and "majority" would make
	// the server consult every replica first (see docs/performance.md).
	QueryRunOptions *r.RunOpts
	// NoChangeFeed turns off the table changefeed that raises other queues' events here
	// and tells the queue of jobs added, cancelled or removed elsewhere. An idle worker
	// without it does not see other processes' jobs until its own add or its review.
	NoChangeFeed bool
	// LocalEventsOnly makes the queue raise the events of its own work only (Event.Local),
	// never those of other queues' jobs (added, active, progress, completed, failed, …),
	// so that its changefeed always carries only the changes processing acts on,
	// filtered on the server: jobs added or made claimable elsewhere, changes to the jobs
	// this queue runs, a global pause, resume or review, and what frees a group's or a
	// sequence's slot or settles a workflow.
	//
	// Without it, a queue follows that narrow feed only until the first Events call that
	// asks for other queues' job events (all types, or completed, say), and the whole feed
	// while such listeners remain (and 30 s after the last has gone). Set it on worker processes that listen to their own events only:
	// every change of the table reaches every process's whole feed, so with N worker
	// processes those feeds cost the server N times each change (on a two-core server, a
	// fifth to two fifths of the throughput of 4 processes, and half that of 8; see
	// docs/performance.md). While the feed is narrow, a job limited by name (SetLimit)
	// that waits for a run to end in another process starts within 250 ms of it, not at
	// once. Ignored with NoChangeFeed.
	LocalEventsOnly bool
	// Concurrency is how many jobs the queue runs at once (default 1).
	Concurrency int
	// MasterInterval is how often this queue reviews the table as a Queue Master (default
	// 310s; negative: this queue is not a Queue Master).
	MasterInterval time.Duration
	// LimitJobLogs is how many log entries a job keeps (default 1000; negative: no limit).
	LimitJobLogs int
	// RemoveFinishedJobs is how long completed, cancelled and terminated jobs are kept
	// (default 180 days). KeepFinishedJobs (any negative value) keeps them for ever;
	// RemoveFinishedJobsImmediately removes them as soon as they finish.
	RemoveFinishedJobs time.Duration
	// JobOptions are the options CreateJob gives new jobs; nil means job.DefaultOptions().
	// As everywhere, a zero field means its default (see job.Options): RetryMax 0 is 3
	// retries, job.NoRetries none.
	JobOptions *job.Options
	// Logger receives the queue's diagnostics (default: discarded). Messages about a job
	// are logged with its handler's context, so a handler that carries trace ids in its
	// context (see BaseContext) finds them in the log records.
	Logger *slog.Logger
	// Middleware wraps the handler given to Process, the first outermost: with [a, b] a
	// job runs a(b(handler)).
	Middleware []Middleware
	// BaseContext returns the parent of every handler context (default
	// context.Background), so that values such as trace ids flow into handlers. Its
	// cancellation cancels the running handlers' contexts, as Stop does.
	BaseContext func() context.Context
	// Heartbeat sets the lease of running jobs (default 10s; negative: off, the original's
	// lease of timeout + retryDelay × retryCount from the start). With heartbeats on, a
	// running job's lease lasts Heartbeat + 1s and is renewed every Heartbeat/4 while its
	// handler runs (one query for all of the queue's running jobs), so that it never has
	// less than Heartbeat/2 + 1s left (6s by default: how long a failure may last without
	// costing a second run; raise Heartbeat to tolerate longer ones), and Queue Masters look
	// for expired leases every Heartbeat/4: a job whose worker died is retried within
	// about 1.25 × Heartbeat + 1s instead of after its timeout and the next review. A
	// Node.js master sees a valid future dateEnable while the worker lives. The queue's
	// worker entry (see Queue.Workers) is written with each renewal.
	Heartbeat time.Duration
	// OnTerminated, when set, is called once, in its own goroutine, for each job of this
	// queue that ends terminated: failed with no retries left. err is the last error.
	OnTerminated func(j *job.Job, err error)
	// RetryBackoff, when set, is this queue's retry delay: how long a job that failed waits
	// before its retry number retry (1 for the first). It serves the jobs whose own policy
	// is the linear default (an exponential job.Backoff wins); a negative result counts as
	// 0, and one that panics falls back to the linear delay. It is not stored: a job retried
	// by another process gets that process's delay (a Node.js worker's is linear).
	RetryBackoff func(j *job.Job, retry int) time.Duration
	// EventBuffer is how many events each Events channel holds for a reader that is
	// behind (default 256); events that find it full are dropped, counted and logged.
	EventBuffer int
	// Metrics, when set, receives what this queue's processing does: claims and the end
	// of each run (package metrics has one that serves the Prometheus text format).
	Metrics Metrics
	// Shards and Replicas configure the queue's table when this queue creates it (zero:
	// the server's default, one of each): a table of several shards spreads the write load
	// of its jobs over as many primaries, on a RethinkDB cluster (see docs/performance.md
	// for when that pays). A table that exists keeps its configuration, whatever these
	// say; the queue logs a warning when they differ. Reconfigure a table with RethinkDB's
	// own tools (r.table(name).reconfigure).
	Shards, Replicas int
}

// Defaults of the connection and of Options, the original library's.
const (
	DefaultHost               = "localhost"
	DefaultPort               = 28015
	DefaultDB                 = "rjqJobQueue"
	DefaultName               = "rjqJobList"
	DefaultDatabaseInitDelay  = time.Second
	DefaultConcurrency        = 1
	DefaultMasterInterval     = 310 * time.Second
	DefaultLimitJobLogs       = 1000
	DefaultRemoveFinishedJobs = 180 * 24 * time.Hour
	DefaultHeartbeat          = 10 * time.Second
	DefaultEventBuffer        = 256
)

// Values of Options.RemoveFinishedJobs with a special meaning.
const (
	// KeepFinishedJobs never removes finished jobs; any negative value means the same.
	KeepFinishedJobs time.Duration = -1
	// RemoveFinishedJobsImmediately removes each job as soon as it finishes.
	RemoveFinishedJobsImmediately time.Duration = 1
)

// DefaultQueryRunOptions are the run options used when Options.QueryRunOptions is nil.
func DefaultQueryRunOptions() r.RunOpts { return r.RunOpts{ReadMode: "majority"} }

// serverAddress is the host and port cxn names, from Address or Host and Port, or the
// first of Addresses.
func serverAddress(cxn *ConnectOptions) (string, int, error) {
	host, port := cxn.Host, cxn.Port
	if cxn.Address != "" {
		if host != "" || port != 0 {
			return "", 0, fmt.Errorf("%w: ConnectOptions.Address %q and Host/Port are both set: set one", ErrInvalidOption, cxn.Address)
		}
		var err error
		if host, port, err = splitAddress(cxn.Address); err != nil {
			return "", 0, fmt.Errorf("%w: ConnectOptions.Address: %w", ErrInvalidOption, err)
		}
	}
	return engine.FirstAddress(host, port, cxn.Addresses)
}

// publicHook is an OnTerminated hook as the engine calls it: with the queue's errors.
func publicHook(h func(*job.Job, error)) func(*job.Job, error) {
	if h == nil {
		return nil
	}
	return func(j *job.Job, err error) { h(j, publicErr(err)) }
}

// resolve applies the defaults to cxn and opts and checks them.
func resolve(cxn *ConnectOptions, opts *Options) (engine.Config, []Middleware, error) {
	if cxn == nil {
		cxn = &ConnectOptions{}
	}
	if opts == nil {
		opts = &Options{}
	}
	host, port, err := serverAddress(cxn)
	if err != nil {
		return engine.Config{}, nil, publicErr(err)
	}
	c := engine.Config{
		Host:            cmp.Or(host, DefaultHost),
		Port:            cmp.Or(port, DefaultPort),
		Addresses:       cxn.Addresses,
		TLS:             cxn.TLS,
		DB:              cmp.Or(cxn.DB, DefaultDB),
		Username:        cxn.Username,
		Password:        cxn.Password,
		Session:         cxn.Session,
		Name:            cmp.Or(opts.Name, DefaultName),
		InitDelay:       cmp.Or(opts.DatabaseInitDelay, DefaultDatabaseInitDelay),
		RunOpts:         DefaultQueryRunOptions(),
		ChangeFeed:      !opts.NoChangeFeed,
		LocalEventsOnly: opts.LocalEventsOnly,
		Concurrency:     cmp.Or(opts.Concurrency, DefaultConcurrency),
		MasterInterval:  cmp.Or(opts.MasterInterval, DefaultMasterInterval),
		LimitJobLogs:    cmp.Or(opts.LimitJobLogs, DefaultLimitJobLogs),
		RemoveFinished:  cmp.Or(opts.RemoveFinishedJobs, DefaultRemoveFinishedJobs),
		JobOptions:      job.DefaultOptions(),
		Logger:          cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		BaseContext:     opts.BaseContext,
		Heartbeat:       cmp.Or(opts.Heartbeat, DefaultHeartbeat),
		OnTerminated:    publicHook(opts.OnTerminated),
		RetryBackoff:    opts.RetryBackoff,
		Metrics:         opts.Metrics,
		EventBuffer:     cmp.Or(opts.EventBuffer, DefaultEventBuffer),
		Shards:          opts.Shards,
		Replicas:        opts.Replicas,
		Public:          publicErr,
	}
	if c.BaseContext == nil {
		c.BaseContext = context.Background
	}
	if opts.QueryRunOptions != nil {
		c.RunOpts = *opts.QueryRunOptions
		c.RunOpts.Context = nil
	}
	if opts.JobOptions != nil {
		c.JobOptions = opts.JobOptions.WithDefaults()
	}
	for i, m := range opts.Middleware {
		if m == nil {
			return engine.Config{}, nil, fmt.Errorf("%w: middleware %d is nil", ErrInvalidOption, i)
		}
	}
	return c, slices.Clone(opts.Middleware), publicErr(c.Validate())
}
