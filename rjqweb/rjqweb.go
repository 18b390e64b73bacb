// Package rjqweb is the rjq dashboard as an http.Handler, to mount in a server of your
// own: an overview of every queue of the database (counts, pause, the oldest waiting
// job's age, live Go workers), the counts of a queue by status, a chart of finished runs
// per minute over the last hour, the job list with filters and paging, each job's page
// with its progress and log, all kept current over server-sent events, and Prometheus
// metrics at "metrics". With Options.Open, the overview links to every queue's own
// dashboard, under "q/<name>/". The command `rjq web` serves the same handler on a port
// of its own.
//
//	h, err := rjqweb.New(rjqweb.Options{
//		Queue: q, Session: session, Prefix: "/jobs/",
//		Auth: rjqweb.BasicAuth("ops", os.Getenv("DASHBOARD_PASSWORD")),
//	})
//	mux.Handle("/jobs/", h)
//
// It is a module of its own (github.com/rjqgo/rethinkdb-job-queue/rjqweb), so that users
// of the queue library download nothing of it.
//
// # What it serves
//
// Under the prefix: the page at "", its JSON API under "api/", server-sent events at
// "api/events" and the metrics at "metrics". The page refers to everything by relative
// URLs, so it works under any prefix. Every request passes Options.Auth first (401 when it
// refuses). The write endpoints (cancel, reanimate and remove a job; global pause and
// resume) answer 403 unless Options.Actions is set, and refuse cross-origin requests from
// browsers with 403 (http.CrossOriginProtection): another site's page cannot make a
// signed-in browser change the queue. Reads stay open to any origin that passes Auth. The
// page may only be framed by pages of its own origin (frame-ancestors 'self'), so another
// site cannot overlay its buttons either.
//
// # Metrics
//
// Series: rjq_jobs{queue,status} (read at each scrape), rjq_events_total{queue,type} (the
// queue's events since the handler was made), and rjq_jobs_claimed_total,
// rjq_jobs_deadline_passed_total, rjq_runs_total{queue,status} and the histogram
// rjq_run_duration_seconds, counted from the table's changefeed, so they cover every
// worker of the table, Go or Node.js: one dashboard's scrape is the whole table's (do not
// add up the scrapes of two dashboards of one queue). Options.MetricNames and
// Options.MetricGroups add bounded name and group labels to the run series. Read at each
// scrape too: rjq_queue_paused{queue} (1 while the queue is paused, as the queue and the
// State Document say) and rjq_queue_oldest_waiting_seconds{queue} (how long the oldest due
// job has waited since its dateEnable, 0 when none: an index read per priority, never a
// scan). A backlog that only grows shows in the latter before anyone looks at the counts.
//
// # Lifetime
//
// New starts two goroutines: one takes the queue's events (for the page, the chart and
// rjq_events_total) and one follows the table's changefeed on Options.Session (for the run
// series). Both end when the queue stops; close the session after stopping the queue.
package rjqweb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/metrics"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

//go:embed web/index.html
var indexHTML []byte

// seedTimeout bounds New's read of the last hour's finished runs.
const seedTimeout = 30 * time.Second

// Options configure the dashboard. Queue and Session are required.
type Options struct {
	// Queue is the queue the dashboard shows and acts on. Open it with its changefeed on
	// (NoChangeFeed false), so that the page learns what other processes do; a queue
	// opened only to watch needs no Master (MasterInterval -1) and no heartbeat
	// (Heartbeat -1), and does not call Process.
	Queue *queue.Queue
	// Session reads the queue's table directly: pages of the job list (through the
	// primary index, never the whole table), the chart's last hour when New runs, and the
	// changefeed the run metrics come from. It may be the session the queue uses. Give it
	// no ReadTimeout (the changefeed waits on it while the table is quiet), and close it
	// only after the queue has stopped.
	Session *r.Session
	// Prefix is the path the handler is mounted at, such as "/jobs/" (a trailing slash is
	// added when missing); default "/". The handler serves only paths under it, answers
	// the prefix without its slash with a redirect to it, and expects the full path: mount
	// it with mux.Handle(prefix, h), not under http.StripPrefix.
	Prefix string
	// Actions enables the write endpoints and the page's buttons (cancel, reanimate and
	// remove a job; pause and resume every queue of the table). Off, the dashboard is
	// read-only and the write endpoints answer 403.
	Actions bool
	// Auth, when not nil, decides whether a request may see the dashboard at all (page,
	// API, events and metrics); a refused request gets 401. BasicAuth and BearerToken
	// make one. Nil: no authentication, for a dashboard on a loopback or private address.
	Auth func(*http.Request) bool
	// MetricNames, when above 0, labels the run series (rjq_runs_total,
	// rjq_run_duration_seconds) with the job's name: the first MetricNames names seen,
	// every later one as "other" (see metrics.Options.NameLabels). 0: no name label.
	MetricNames int
	// MetricGroups, when above 0, labels the run series with the job's group
	// (job.SetGroup): the first MetricGroups groups seen, every later one as "other", a
	// job without a group as "" (see metrics.Options.GroupLabels). 0: no group label.
	MetricGroups int
	// Logger receives the errors of the run metrics' changefeed (it retries every
	// second). Nil: they are discarded.
	Logger *slog.Logger
	// Open, when set, opens another queue of the database by name, for the overview of
	// every queue (api/queues) to link to: that queue's dashboard is served under
	// "q/<name>/", made on its first visit with these options, and kept. Open is called
	// only for a table that is a queue already (it is never asked to create one), and the
	// dashboard never stops what it returns: stop those queues when you are done (rjq web
	// does at exit). Nil: the overview lists every queue, but links to this one only.
	Open func(ctx context.Context, name string) (*queue.Queue, error)
}

// dashboard serves the web page, its JSON API, server-sent events and the metrics.
type dashboard struct {
	q       *queue.Queue
	s       *r.Session
	prefix  string
	actions bool
	auth    func(*http.Request) bool
	routes  http.Handler

	mu     sync.Mutex
	counts map[queue.EventType]uint64
	subs   map[chan queue.Event]struct{}
	// runs counts claims and run ends with their durations, from the changefeed.
	runs       *metrics.Collector
	throughput throughput
	// done is closed once the background goroutines have returned (the queue stopped).
	done chan struct{}
	// others serves the dashboards of the other queues of the database (overview.go): set
	// on the root dashboard only. nav links the overview's queues, on every dashboard.
	others, nav *others
}

// New returns the dashboard of opts.Queue. It reads the finished runs of the last hour
// for the chart once, before returning (bounded by 30 seconds), and fails when that read
// does, when Queue or Session is nil, or when Prefix is not a clean absolute path.
func New(opts Options) (http.Handler, error) {
	if opts.Queue == nil || opts.Session == nil {
		return nil, errors.New("rjqweb: Options.Queue and Options.Session are required")
	}
	prefix, err := cleanPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	d, err := newDashboard(opts, prefix)
	if err != nil {
		return nil, err
	}
	d.others = &others{root: prefix, rootQueue: opts.Queue.Name(), opts: opts, byName: map[string]*dashboard{}}
	d.nav = d.others
	return d, nil
}

// newDashboard makes the dashboard of opts.Queue under prefix.
func newDashboard(opts Options, prefix string) (*dashboard, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &dashboard{q: opts.Queue, s: opts.Session, prefix: prefix, actions: opts.Actions, auth: opts.Auth,
		counts: make(map[queue.EventType]uint64), subs: make(map[chan queue.Event]struct{}),
		runs: metrics.NewWith(metrics.Options{NameLabels: opts.MetricNames, GroupLabels: opts.MetricGroups, AllWorkers: true}), done: make(chan struct{})}
	d.routes = d.mux()
	// The state gauges of the shown queue come from the Collector too; its counts are
	// rjq_jobs already.
	d.runs.WatchWith(d.q, metrics.WatchOptions{Session: d.s, NoDepth: true})

	// Subscribe before seeding the chart, so that no run finishing meanwhile is missed.
	life, end := context.WithCancel(context.Background())
	events := d.q.Events(life)
	seedCtx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	if err := d.throughput.seed(seedCtx, d.s, d.table(), time.Now()); err != nil {
		end()
		return nil, fmt.Errorf("rjqweb: read the last hour's finished jobs: %w", err)
	}
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followRuns(life, d.s, d.table(), d.q.Name(), d.runs, log)
	}()
	go func() {
		d.fanOut(events) // until the queue stops
		end()
		<-followed
		close(d.done)
	}()
	return d, nil
}

// cleanPrefix checks a mount path and gives it its trailing slash.
func cleanPrefix(p string) (string, error) {
	if p == "" || p == "/" {
		return "/", nil
	}
	dir := strings.TrimSuffix(p, "/")
	if !strings.HasPrefix(dir, "/") || path.Clean(dir) != dir || dir == "/" {
		return "", fmt.Errorf("rjqweb: Options.Prefix %q: want a clean absolute path such as /jobs/", p)
	}
	return dir + "/", nil
}

// table is the queue's table.
func (d *dashboard) table() r.Term { return r.DB(d.q.DB()).Table(d.q.Name()) }

// ServeHTTP checks the path and Auth, then routes the request.
func (d *dashboard) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := req.URL.Path
	if !strings.HasPrefix(p, d.prefix) && p+"/" != d.prefix {
		http.NotFound(w, req)
		return
	}
	if d.auth != nil && !authorized(d.auth, w, req) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if d.others != nil && d.others.serve(w, req) {
		return
	}
	if p+"/" == d.prefix {
		// Relative, so that it holds behind a proxy that mounts the server elsewhere.
		target := path.Base(p) + "/"
		if req.URL.RawQuery != "" {
			target += "?" + req.URL.RawQuery
		}
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	d.routes.ServeHTTP(w, req)
}

// mux routes the paths under the prefix.
func (d *dashboard) mux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.page)
	mux.HandleFunc("GET /api/summary", d.summary)
	mux.HandleFunc("GET /api/queues", d.queues)
	mux.HandleFunc("GET /api/jobs", d.jobs)
	mux.HandleFunc("GET /api/jobs/{id}", d.job)
	mux.HandleFunc("GET /api/jobs/{id}/feed", d.jobFeed)
	mux.Handle("POST /api/jobs/{id}/{action}", d.writable(d.act))
	mux.Handle("POST /api/bulk/{action}", d.writable(d.bulk))
	mux.HandleFunc("GET /api/side", d.side)
	mux.Handle("POST /api/schedules/{name}/remove", d.writable(d.unschedule))
	mux.Handle("POST /api/limits/{name}/remove", d.writable(d.unlimit))
	mux.Handle("POST /api/{action}", d.writable(d.global))
	mux.HandleFunc("GET /api/throughput", d.chart)
	mux.HandleFunc("GET /api/events", d.events)
	mux.HandleFunc("GET /metrics", d.metrics)
	return http.StripPrefix(strings.TrimSuffix(d.prefix, "/"), mux)
}

// writable guards a write endpoint: refused with 403 unless actions are on, and refused
// with 403 when a browser sends it from another origin.
func (d *dashboard) writable(h http.HandlerFunc) http.Handler {
	return http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !d.actions {
			http.Error(w, "read-only dashboard: actions are off (rjqweb Options.Actions, rjq web --actions)", http.StatusForbidden)
			return
		}
		h(w, req)
	}))
}

// page serves the dashboard's page. Only pages of its own origin may frame it, so that no
// other site can lay its buttons under a decoy.
func (d *dashboard) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'self'")
	w.Header().Set("X-Frame-Options", "SAMEORIGIN")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(indexHTML)
}
