package queue

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// ConnectOptions say which RethinkDB server and database a queue uses. The zero value
// means localhost:28015, database rjqJobQueue, user admin with no password.
type ConnectOptions struct {
	Host string
	Port int
	DB   string
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
	// Its Context field is ignored: each call's context is used.
	QueryRunOptions *r.RunOpts
	// NoChangeFeed turns off the table changefeed that raises other queues' events here.
	NoChangeFeed bool
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
	// Every field is used as given, so RetryMax 0 means no retries, except a zero Priority
	// or Timeout, which mean Normal and job.DefaultTimeout.
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
	// running job's lease lasts Heartbeat + 1s and is renewed every Heartbeat/2 while its
	// handler runs (one query for all of the queue's running jobs), and Queue Masters look
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
	// Metrics, when set, receives what this queue's processor does: claims and the end
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

// config is Options and ConnectOptions with every default applied and checked.
type config struct {
	host           string
	port           int
	addresses      []string
	tls            *tls.Config
	db             string
	username       string
	password       string
	session        *r.Session
	name           string
	initDelay      time.Duration
	runOpts        r.RunOpts
	changeFeed     bool
	concurrency    int
	masterInterval time.Duration
	limitJobLogs   int
	removeFinished time.Duration
	jobOptions     job.Options
	logger         *slog.Logger
	middleware     []Middleware
	baseContext    func() context.Context
	heartbeat      time.Duration
	onTerminated   func(*job.Job, error)
	retryBackoff   func(*job.Job, int) time.Duration
	eventBuffer    int
	metrics        Metrics
	shards         int
	replicas       int
}

// RethinkDB accepts these characters in database and table names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func resolve(cxn *ConnectOptions, opts *Options) (config, error) {
	if cxn == nil {
		cxn = &ConnectOptions{}
	}
	if opts == nil {
		opts = &Options{}
	}
	host, port, err := firstAddress(cxn)
	if err != nil {
		return config{}, err
	}
	c := config{
		host:           or(host, DefaultHost),
		port:           or(port, DefaultPort),
		addresses:      cxn.Addresses,
		tls:            cxn.TLS,
		db:             or(cxn.DB, DefaultDB),
		username:       cxn.Username,
		password:       cxn.Password,
		session:        cxn.Session,
		name:           or(opts.Name, DefaultName),
		initDelay:      or(opts.DatabaseInitDelay, DefaultDatabaseInitDelay),
		runOpts:        DefaultQueryRunOptions(),
		changeFeed:     !opts.NoChangeFeed,
		concurrency:    or(opts.Concurrency, DefaultConcurrency),
		masterInterval: or(opts.MasterInterval, DefaultMasterInterval),
		limitJobLogs:   or(opts.LimitJobLogs, DefaultLimitJobLogs),
		removeFinished: or(opts.RemoveFinishedJobs, DefaultRemoveFinishedJobs),
		jobOptions:     job.DefaultOptions(),
		logger:         opts.Logger,
		middleware:     slices.Clone(opts.Middleware),
		baseContext:    opts.BaseContext,
		heartbeat:      or(opts.Heartbeat, DefaultHeartbeat),
		onTerminated:   opts.OnTerminated,
		retryBackoff:   opts.RetryBackoff,
		metrics:        opts.Metrics,
		eventBuffer:    or(opts.EventBuffer, DefaultEventBuffer),
		shards:         opts.Shards,
		replicas:       opts.Replicas,
	}
	if c.baseContext == nil {
		c.baseContext = context.Background
	}
	if opts.QueryRunOptions != nil {
		c.runOpts = *opts.QueryRunOptions
		c.runOpts.Context = nil
	}
	if opts.JobOptions != nil {
		c.jobOptions = opts.JobOptions.WithDefaults()
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c, c.validate()
}

// firstAddress is the host and port Queue.Host and Queue.Port report: Host and Port, or
// else the first of Addresses, each of which must be host:port.
func firstAddress(cxn *ConnectOptions) (host string, port int, err error) {
	host, port = cxn.Host, cxn.Port
	for i, a := range cxn.Addresses {
		h, p, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil || h == "" || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("%w: address %d %q: want host:port", ErrInvalidOption, i, a)
		}
		if i == 0 && host == "" && port == 0 {
			host, port = h, n
		}
	}
	return host, port, nil
}

// validate reports the first setting of c that is out of range.
func (c config) validate() error {
	switch {
	case !namePattern.MatchString(c.db):
		return fmt.Errorf("%w: database name %q: use letters, digits, '_' and '-' only", ErrInvalidOption, c.db)
	case !namePattern.MatchString(c.name):
		return fmt.Errorf("%w: queue name %q: use letters, digits, '_' and '-' only", ErrInvalidOption, c.name)
	case c.port < 1 || c.port > 65535:
		return fmt.Errorf("%w: port %d", ErrInvalidOption, c.port)
	case c.concurrency < 1:
		return fmt.Errorf("%w: concurrency %d: must be at least 1", ErrInvalidOption, c.concurrency)
	case c.eventBuffer < 1:
		return fmt.Errorf("%w: event buffer %d: must be at least 1", ErrInvalidOption, c.eventBuffer)
	case c.shards < 0 || c.shards > 64:
		return fmt.Errorf("%w: shards %d: RethinkDB allows 1 to 64", ErrInvalidOption, c.shards)
	case c.replicas < 0:
		return fmt.Errorf("%w: replicas %d: must not be negative", ErrInvalidOption, c.replicas)
	}
	for i, m := range c.middleware {
		if m == nil {
			return fmt.Errorf("%w: middleware %d is nil", ErrInvalidOption, i)
		}
	}
	if err := c.jobOptions.Validate(); err != nil {
		return fmt.Errorf("%w: job options: %w", ErrInvalidOption, err)
	}
	return nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// addr names the server (or servers) the queue dials, for messages.
func (c config) addr() string {
	if len(c.addresses) > 0 {
		return strings.Join(c.addresses, ",")
	}
	return net.JoinHostPort(c.host, strconv.Itoa(c.port))
}

func (c config) master() bool { return c.masterInterval > 0 }

func (c config) heartbeats() bool { return c.heartbeat > 0 }

func (c config) removeImmediately() bool {
	return c.removeFinished == RemoveFinishedJobsImmediately
}
