package rjqweb

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// others are the dashboards of the other queues of the database, for the overview of
// every queue to link to: each is made on its first visit through Options.Open, under
// "q/<name>/" of the root dashboard, and kept.
type others struct {
	root, rootQueue string
	opts            Options

	mu     sync.Mutex
	byName map[string]*dashboard
}

// openTimeout bounds the opening of another queue and its dashboard.
const openTimeout = 30 * time.Second

// queueName is what a queue's name (a table name) may hold.
var queueName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// serve serves a request for another queue's dashboard ("q/<name>/…" under the root)
// and reports whether it was one.
func (o *others) serve(w http.ResponseWriter, req *http.Request) bool {
	rest, ok := strings.CutPrefix(req.URL.Path, o.root+"q/")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == o.rootQueue {
		// Relative (http.Redirect would make it absolute), so that it holds behind a
		// proxy that mounts the server elsewhere.
		w.Header().Set("Location", strings.Repeat("../", strings.Count(rest, "/")+1))
		w.WriteHeader(http.StatusFound)
		return true
	}
	d, err := o.dashboard(req.Context(), name)
	if err != nil {
		httpError(w, err)
		return true
	}
	d.ServeHTTP(w, req)
	return true
}

// dashboard returns the dashboard of the queue name, made at the first call.
func (o *others) dashboard(ctx context.Context, name string) (*dashboard, error) {
	if o.opts.Open == nil {
		return nil, notFound("this dashboard shows one queue (rjqweb Options.Open is not set)")
	}
	if !queueName.MatchString(name) {
		return nil, badRequest(fmt.Sprintf("%q is not a queue name", name))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if d, ok := o.byName[name]; ok {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	// Open only what is a queue already: a queue opened on any other name would create
	// its table.
	names, err := listing.QueueNames(ctx, o.opts.Session, o.opts.Queue.DB())
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, name) {
		return nil, notFound(fmt.Sprintf("no queue %q in database %s", name, o.opts.Queue.DB()))
	}
	q, err := o.opts.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open queue %q: %w", name, err)
	}
	opts := o.opts
	opts.Queue, opts.Auth = q, nil // the root dashboard checked Auth already
	d, err := newDashboard(opts, o.root+"q/"+name+"/")
	if err != nil {
		return nil, err
	}
	d.nav = o
	o.byName[name] = d
	return d, nil
}

// notFound is an error that answers 404.
func notFound(msg string) error { return fmt.Errorf("%s: %w", msg, job.ErrNotFound) }

// href is the link from the page of the queue whose dashboard is at from to the page of
// the queue name, relative so that it holds under any prefix and behind a proxy.
func (o *others) href(from, name string) string {
	to := o.root
	if name != o.rootQueue {
		to += "q/" + name + "/"
	}
	if to == from {
		return "./"
	}
	up := ""
	if from != o.root {
		up = "../../"
	}
	return up + strings.TrimPrefix(to, o.root)
}

// overviewQueue is a queue of the overview, with the link to its page ("" when there is
// none).
type overviewQueue struct {
	listing.Queue
	Href string `json:"href"`
}

// queues serves the overview of every queue of the database: counts (finished ones from
// the tally on big tables), pause, the oldest waiting job's age and the live Go workers.
func (d *dashboard) queues(w http.ResponseWriter, req *http.Request) {
	list, err := listing.Queues(req.Context(), d.s, d.q.DB(), time.Now())
	if err != nil {
		httpError(w, err)
		return
	}
	out := make([]overviewQueue, len(list))
	for i, q := range list {
		out[i] = overviewQueue{Queue: q}
		if d.nav.opts.Open != nil || q.Name == d.q.Name() || q.Name == d.nav.rootQueue {
			out[i].Href = d.nav.href(d.prefix, q.Name)
		}
	}
	writeJSON(w, map[string]any{"db": d.q.DB(), "current": d.q.Name(), "queues": out})
}
