package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Config is queue.Options and queue.ConnectOptions with every default applied; Validate
// checks it.
type Config struct {
	Host       string
	Port       int
	Addresses  []string
	TLS        *tls.Config
	DB         string
	Username   string
	Password   string
	Session    *r.Session // given by the caller, who closes it; nil: dial
	Name       string
	InitDelay  time.Duration
	RunOpts    r.RunOpts
	ChangeFeed bool
	// LocalEventsOnly narrows the changefeed to what processing needs and raises no
	// events of other queues' jobs (changefeed.FollowWorker).
	LocalEventsOnly bool
	Concurrency     int
	MasterInterval  time.Duration
	LimitJobLogs    int
	RemoveFinished  time.Duration
	JobOptions      job.Options
	Logger          *slog.Logger
	BaseContext     func() context.Context
	Heartbeat       time.Duration
	OnTerminated    func(*job.Job, error)
	RetryBackoff    func(*job.Job, int) time.Duration
	EventBuffer     int
	Metrics         Metrics
	Shards          int
	Replicas        int
	// Public, when set, turns the engine's errors into the caller's where they reach
	// users without passing through the caller: a job's saves (Update, AddLog,
	// UpdateProgress) and the cause of a handler's context at Stop.
	Public func(error) error
}

// RemoveImmediately is the value of Config.RemoveFinished that removes each job as soon as
// it finishes (queue.RemoveFinishedJobsImmediately).
const RemoveImmediately time.Duration = 1

// RethinkDB accepts these characters in database and table names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate reports the first setting of c that is out of range.
func (c Config) Validate() error {
	switch {
	case !namePattern.MatchString(c.DB):
		return fmt.Errorf("%w: database name %q: use letters, digits, '_' and '-' only", ErrInvalidOption, c.DB)
	case !namePattern.MatchString(c.Name):
		return fmt.Errorf("%w: queue name %q: use letters, digits, '_' and '-' only", ErrInvalidOption, c.Name)
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("%w: port %d", ErrInvalidOption, c.Port)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: concurrency %d: must be at least 1", ErrInvalidOption, c.Concurrency)
	case c.EventBuffer < 1:
		return fmt.Errorf("%w: event buffer %d: must be at least 1", ErrInvalidOption, c.EventBuffer)
	case c.Shards < 0 || c.Shards > 64:
		return fmt.Errorf("%w: shards %d: RethinkDB allows 1 to 64", ErrInvalidOption, c.Shards)
	case c.Replicas < 0:
		return fmt.Errorf("%w: replicas %d: must not be negative", ErrInvalidOption, c.Replicas)
	}
	if err := c.JobOptions.Validate(); err != nil {
		return fmt.Errorf("%w: job options: %w", ErrInvalidOption, err)
	}
	return nil
}

// FirstAddress is the host and port Queue.Host and Queue.Port report: host and port, or
// else the first of addresses, each of which must be host:port.
func FirstAddress(host string, port int, addresses []string) (string, int, error) {
	for i, a := range addresses {
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

// Addr names the server (or servers) the queue dials, for messages.
func (c Config) Addr() string {
	if len(c.Addresses) > 0 {
		return strings.Join(c.Addresses, ",")
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// Master is queue.Queue.Master, whose doc says what it does.
func (c Config) Master() bool { return c.MasterInterval > 0 }

func (c Config) heartbeats() bool { return c.Heartbeat > 0 }

// RemovesImmediately reports whether finished jobs are removed as soon as they finish.
func (c Config) RemovesImmediately() bool { return c.RemoveFinished == RemoveImmediately }
