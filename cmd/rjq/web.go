package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

//go:embed web/index.html
var indexHTML []byte

// dashboard serves the web page, its JSON API, server-sent events and /metrics.
type dashboard struct {
	c       config
	q       *queue.Queue
	actions bool

	mu     sync.Mutex
	counts map[queue.EventType]uint64
	// runs counts claims and run ends with their durations, from the changefeed.
	runs       *metrics.Collector
	subs       map[chan queue.Event]struct{}
	throughput throughput
}

func cmdWeb(ctx context.Context, c config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "127.0.0.1:8090", "address to serve on")
	actions := fs.Bool("actions", false, "enable cancel, reanimate, remove, pause and resume buttons")
	if err := fs.Parse(args); err != nil {
		return usagef("web: %v", err)
	}
	q, done, err := c.openWatching(ctx)
	if err != nil {
		return err
	}
	defer done()
	feed, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer feed.Close()
	d := &dashboard{c: c, q: q, actions: *actions, counts: make(map[queue.EventType]uint64), subs: make(map[chan queue.Event]struct{}),
		runs: metrics.New()}
	feedCtx, endFeed := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followRuns(feedCtx, feed, c, d.runs, os.Stderr)
	}()
	// The feed ends before its session closes: the driver does not allow closing a
	// cursor's connection while another goroutine waits on it.
	defer func() { endFeed(); <-followed }()
	// Subscribe before seeding the chart, so that no run finishing meanwhile is missed.
	go d.fanOut(q.Events(ctx))
	if err := d.seedThroughput(ctx, time.Now()); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return usagef("web: listen on %s: %v", *listen, err)
	}
	fmt.Fprintf(out, "rjq web: http://%s/ (queue %s, actions %v)\n", l.Addr(), c.queue, *actions)
	srv := &http.Server{Handler: d.routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (d *dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(indexHTML)
	})
	mux.HandleFunc("GET /api/summary", d.summary)
	mux.HandleFunc("GET /api/jobs", d.jobs)
	mux.HandleFunc("GET /api/jobs/{id}", d.job)
	mux.HandleFunc("POST /api/jobs/{id}/{action}", d.writable(d.act))
	mux.HandleFunc("POST /api/{action}", d.writable(d.global))
	mux.HandleFunc("GET /api/throughput", d.chart)
	mux.HandleFunc("GET /api/events", d.events)
	mux.HandleFunc("GET /metrics", d.metrics)
	return mux
}

// writable refuses an action unless the dashboard was started with --actions.
func (d *dashboard) writable(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.actions {
			http.Error(w, "read-only: start rjq web with --actions to enable actions", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// fanOut counts the table's events for /metrics and the throughput chart, and passes them
// to the event streams.
func (d *dashboard) fanOut(events <-chan queue.Event) {
	for e := range events {
		d.throughput.event(e, time.Now())
		d.mu.Lock()
		d.counts[e.Type]++
		for ch := range d.subs {
			select {
			case ch <- e:
			default: // a slow browser misses updates; it reloads on the next one
			}
		}
		d.mu.Unlock()
	}
}

// seedThroughput fills the chart with the runs that finished in its window before until.
func (d *dashboard) seedThroughput(ctx context.Context, until time.Time) error {
	s, err := d.c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := d.throughput.seed(ctx, s, d.c, until); err != nil {
		return fmt.Errorf("web: read the last hour's finished jobs: %w", err)
	}
	return nil
}

// chart serves the throughput chart's minutes, oldest first.
func (d *dashboard) chart(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"minutes": d.throughput.last(time.Now())})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var ue usageError
	switch {
	case errors.Is(err, job.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &ue), errors.Is(err, job.ErrInvalid):
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

func (d *dashboard) summary(w http.ResponseWriter, r *http.Request) {
	s, err := summarize(r.Context(), d.q)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"queue": d.c.queue, "db": d.c.db, "counts": s, "paused": d.q.Paused(), "actions": d.actions})
}

func (d *dashboard) jobs(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	if status != "" && !job.Status(status).Valid() {
		httpError(w, usagef("unknown status %q", status))
		return
	}
	limit := 25
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n <= 500 {
		limit = n
	}
	s, err := d.c.session(r.Context())
	if err != nil {
		httpError(w, err)
		return
	}
	defer s.Close()
	jobs, err := listPage(r.Context(), s, d.c, status, r.URL.Query().Get("name"), r.URL.Query().Get("after"), limit)
	if err != nil {
		httpError(w, err)
		return
	}
	sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].DateCreated.After(jobs[k].DateCreated) })
	writeJSON(w, jobs)
}

func (d *dashboard) job(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !job.ValidID(id) {
		httpError(w, usagef("%q is not a job id", id))
		return
	}
	jobs, err := d.q.GetJob(r.Context(), id)
	if err != nil {
		httpError(w, err)
		return
	}
	// The page shows the priority by name, as rjq show does.
	writeJSON(w, struct {
		*job.Job
		PriorityName string
	}{jobs[0], jobs[0].Priority.String()})
}

func (d *dashboard) act(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !job.ValidID(id) {
		httpError(w, usagef("%q is not a job id", id))
		return
	}
	var err error
	switch r.PathValue("action") {
	case "cancel":
		_, err = d.q.CancelJob(r.Context(), "cancelled from the rjq dashboard", id)
	case "reanimate":
		_, err = d.q.ReanimateJob(r.Context(), time.Time{}, id)
	case "remove":
		_, err = d.q.RemoveJob(r.Context(), id)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]string{"ok": id})
}

func (d *dashboard) global(w http.ResponseWriter, r *http.Request) {
	var err error
	switch r.PathValue("action") {
	case "pause":
		err = d.q.Pause(r.Context(), true)
	case "resume":
		err = d.q.Resume(r.Context(), true)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]bool{"paused": d.q.Paused()})
}

// events streams the table's events to the page as server-sent events.
func (d *dashboard) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan queue.Event, 256)
	d.mu.Lock()
	d.subs[ch] = struct{}{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.subs, ch)
		d.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, ": connected\n\n")
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-ch:
			b, _ := json.Marshal(map[string]any{"type": e.Type, "job": e.JobID, "progress": e.Progress})
			fmt.Fprintf(w, "data: %s\n\n", b)
			flusher.Flush()
		}
	}
}

// metrics writes the Prometheus text format: jobs by status (read now) and the events
// seen since the dashboard started.
func (d *dashboard) metrics(w http.ResponseWriter, r *http.Request) {
	s, err := summarize(r.Context(), d.q)
	if err != nil {
		httpError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP rjq_jobs Jobs in the queue by status.")
	fmt.Fprintln(w, "# TYPE rjq_jobs gauge")
	for _, kv := range []struct {
		status string
		n      int
	}{{"waiting", s.Waiting}, {"active", s.Active}, {"completed", s.Completed}, {"cancelled", s.Cancelled}, {"failed", s.Failed}, {"terminated", s.Terminated}} {
		fmt.Fprintf(w, "rjq_jobs{queue=%q,status=%q} %d\n", d.c.queue, kv.status, kv.n)
	}
	fmt.Fprintln(w, "# HELP rjq_events_total Queue events seen on the table's changefeed since rjq web started.")
	fmt.Fprintln(w, "# TYPE rjq_events_total counter")
	d.mu.Lock()
	types := make([]string, 0, len(d.counts))
	for t := range d.counts {
		types = append(types, string(t))
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Fprintf(w, "rjq_events_total{queue=%q,type=%q} %d\n", d.c.queue, t, d.counts[queue.EventType(t)])
	}
	d.mu.Unlock()
	d.runs.WriteTo(r.Context(), w)
}
