package rjqweb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/bulk"
	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// badRequest is bad input in a request: 400.
type badRequest string

func (e badRequest) Error() string { return string(e) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var bad badRequest
	switch {
	case errors.Is(err, job.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &bad), errors.Is(err, job.ErrInvalid):
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

func (d *dashboard) summary(w http.ResponseWriter, req *http.Request) {
	s, err := d.q.Summary(req.Context())
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"queue": d.q.Name(), "db": d.q.DB(), "counts": s, "paused": d.q.Paused(), "actions": d.actions})
}

func readAll(ctx context.Context, s *r.Session, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	return cur.All(dst)
}

func (d *dashboard) jobs(w http.ResponseWriter, req *http.Request) {
	query := req.URL.Query()
	status := query.Get("status")
	if status != "" && !job.Status(status).Valid() {
		httpError(w, badRequest(fmt.Sprintf("unknown status %q", status)))
		return
	}
	limit := 25
	if n, err := strconv.Atoi(query.Get("limit")); err == nil && n > 0 && n <= 500 {
		limit = n
	}
	group, sequence := query.Get("group"), query.Get("sequence")
	if status == "" && sequence == "" && (query.Get("field") != "" || query.Get("text") != "") {
		httpError(w, badRequest("a search (field, text) lists one status: give status too"))
		return
	}
	if status == "" && sequence == "" && group != "" {
		// No index holds groups: a page looks at listing.SearchScan jobs of one status.
		httpError(w, badRequest("a group lists one status: give status too"))
		return
	}
	if (status != "" || sequence != "") && query.Get("after") == "" {
		// One status, or a sequence: in its order through its index, both ways
		// (listing.Chrono). The cursors of the pages on each side travel in headers, so
		// that the body stays the list it always was.
		p, err := listing.Chrono(req.Context(), d.s, d.table(), listing.Query{
			Status: status, Name: query.Get("name"), Group: group, Sequence: sequence,
			From: query.Get("cursor"), Newer: query.Get("dir") == "newer", Limit: limit,
			Field: query.Get("field"), Value: listing.ParseValue(query.Get("value")), Text: query.Get("text"),
		})
		if err != nil {
			httpError(w, err)
			return
		}
		w.Header().Set("X-Rjq-Older", p.Older)
		w.Header().Set("X-Rjq-Newer", p.Newer)
		w.Header().Set("X-Rjq-Scanned", strconv.Itoa(p.Scanned))
		writeJSON(w, nonNil(p.Jobs))
		return
	}
	jobs, err := listing.Page(req.Context(), d.s, d.table(), status, query.Get("name"), query.Get("after"), limit)
	if err != nil {
		httpError(w, err)
		return
	}
	sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].DateCreated.After(jobs[k].DateCreated) })
	writeJSON(w, jobs)
}

// nonNil is jobs, or an empty list for none, which encodes as [] rather than null.
func nonNil(jobs []listing.Job) []listing.Job {
	if jobs == nil {
		return []listing.Job{}
	}
	return jobs
}

// jobID is the request's job id, checked.
func jobID(req *http.Request) (string, error) {
	id := req.PathValue("id")
	if !job.ValidID(id) {
		return "", badRequest(fmt.Sprintf("%q is not a job id", id))
	}
	return id, nil
}

func (d *dashboard) job(w http.ResponseWriter, req *http.Request) {
	id, err := jobID(req)
	if err != nil {
		httpError(w, err)
		return
	}
	jobs, err := d.q.GetJob(req.Context(), id)
	if err != nil {
		httpError(w, err)
		return
	}
	// The stored document, with the priority by name, the log by run, the result, the
	// parents and children of a job of a workflow, and what a job that has yet to start
	// waits for, as rjq show --json prints it.
	shown := listing.Shown(jobs[0])
	parents, children, err := listing.Workflow(req.Context(), d.q, jobs[0])
	if err != nil {
		httpError(w, err)
		return
	}
	if parents != nil {
		shown["parents"] = parents
	}
	if children != nil {
		shown["children"] = children
	}
	// What a job that has yet to start waits for, as rjq show --json says it.
	if listing.MayWait(jobs[0]) {
		t := &rdb.Table{Session: d.s, DB: d.q.DB(), Name: d.q.Name()}
		waits, err := listing.WaitsFor(req.Context(), d.q, t, jobs[0], parents, time.Now())
		if err != nil {
			httpError(w, err)
			return
		}
		if waits == nil {
			waits = []listing.Wait{}
		}
		shown["waitsFor"] = waits
	}
	writeJSON(w, shown)
}

func (d *dashboard) act(w http.ResponseWriter, req *http.Request) {
	id, err := jobID(req)
	if err != nil {
		httpError(w, err)
		return
	}
	switch req.PathValue("action") {
	case "cancel":
		_, err = d.q.CancelJob(req.Context(), "cancelled from the rjq dashboard", id)
	case "reanimate":
		_, err = d.q.ReanimateJob(req.Context(), time.Time{}, id)
	case "remove":
		_, err = d.q.RemoveJob(req.Context(), id)
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]string{"ok": id})
}

func (d *dashboard) global(w http.ResponseWriter, req *http.Request) {
	var err error
	switch req.PathValue("action") {
	case "pause":
		err = d.q.Pause(req.Context(), true)
	case "resume":
		err = d.q.Resume(req.Context(), true)
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]bool{"paused": d.q.Paused()})
}

// side serves the queue's live Go workers, cron schedules (with their next run), limits by
// job name, groups, sequences and triggers, in one answer: each is a small table of its
// own.
func (d *dashboard) side(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	workers, err := d.q.Workers(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	schedules, err := d.q.Schedules(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	limits, err := d.q.Limits(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	stats, partial, err := d.q.Groups(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	sequences, sequencesPartial, err := d.q.Sequences(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	triggers, err := d.q.Triggers(ctx)
	if err != nil {
		httpError(w, err)
		return
	}
	rows := listing.LimitRows(limits)
	if workers == nil {
		workers = []queue.Worker{}
	}
	if schedules == nil {
		schedules = []queue.Schedule{}
	}
	writeJSON(w, map[string]any{"workers": workers, "schedules": schedules, "limits": rows, "groups": listing.GroupRows(stats), "groupsPartial": partial,
		"sequences": listing.SequenceRows(sequences), "sequencesPartial": sequencesPartial, "triggers": listing.TriggerRows(triggers)})
}

// unschedule and unlimit remove a schedule or a limit by name (actions on).
func (d *dashboard) unschedule(w http.ResponseWriter, req *http.Request) {
	if err := d.q.Unschedule(req.Context(), req.PathValue("name")); err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]string{"unscheduled": req.PathValue("name")})
}

func (d *dashboard) unlimit(w http.ResponseWriter, req *http.Request) {
	if err := d.q.RemoveLimit(req.Context(), req.PathValue("name")); err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]string{"unlimited": req.PathValue("name")})
}

// bulkTimeout bounds one bulk action: a slice at a time, paced so that processing goes
// on (about 300 jobs a second on a busy two-core server), it stops where it got to.
const bulkTimeout = 30 * time.Minute

// bulk acts on every job of a status (and name): reanimate the failed or terminated ones,
// or remove the finished ones older than olderThan (7d, 36h; 0s for all), a slice at a
// time through an index (internal/bulk). It answers the count, and on failure the count
// done before it in the error.
func (d *dashboard) bulk(w http.ResponseWriter, req *http.Request) {
	query := req.URL.Query()
	f := bulk.Filter{Status: query.Get("status"), Name: query.Get("name")}
	ctx, cancel := context.WithTimeout(req.Context(), bulkTimeout)
	defer cancel()
	var n int
	var err error
	verb := req.PathValue("action") + "d"
	switch req.PathValue("action") {
	case "reanimate":
		n, err = bulk.Reanimate(ctx, d.s, d.table(), f, func(ctx context.Context, ids []string) ([]string, error) {
			return d.q.ReanimateJob(ctx, time.Time{}, ids...)
		}, nil)
	case "remove":
		age, perr := bulk.ParseAge(query.Get("olderThan"))
		if perr != nil {
			httpError(w, badRequest("olderThan: "+perr.Error()))
			return
		}
		n, err = bulk.Remove(ctx, d.s, d.table(), f, time.Now().Add(-age), nil)
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		httpError(w, fmt.Errorf("%s %d jobs, then: %w", verb, n, err))
		return
	}
	writeJSON(w, map[string]int{verb: n})
}

// chart serves the throughput chart's minutes, oldest first.
func (d *dashboard) chart(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"minutes": d.throughput.last(time.Now())})
}

// fanOut counts the queue's events for the metrics and the throughput chart, and passes
// them to the event streams, until the queue stops.
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

// events streams the queue's events to the page as server-sent events, until the page
// goes or the queue stops.
func (d *dashboard) events(w http.ResponseWriter, req *http.Request) {
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
		case <-req.Context().Done():
			return
		case <-d.done:
			return
		case e := <-ch:
			b, _ := json.Marshal(map[string]any{"type": e.Type, "job": e.JobID, "progress": e.Progress})
			fmt.Fprintf(w, "data: %s\n\n", b)
			flusher.Flush()
		}
	}
}

// jobFeed streams a message each time the job changes, from a changefeed on the one job
// (the first at once, for its current value), so that its page shows its progress and
// log as any worker writes them, Go or Node.js. It ends with the request, or when the
// feed does (the queue stopped, the session closed).
func (d *dashboard) jobFeed(w http.ResponseWriter, req *http.Request) {
	id, err := jobID(req)
	if err != nil {
		httpError(w, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	t := &rdb.Table{Session: d.s, DB: d.q.DB(), Name: d.q.Name()}
	cur, err := t.FollowJob(req.Context(), id)
	if err != nil {
		httpError(w, err)
		return
	}
	defer cur.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, ": connected\n\n")
	flusher.Flush()
	var change map[string]any
	for cur.Next(&change) {
		fmt.Fprint(w, "data: changed\n\n")
		flusher.Flush()
	}
}

// metrics writes the Prometheus text format: jobs by status (read now), the events seen
// since the handler was made, and the runs counted from the changefeed.
func (d *dashboard) metrics(w http.ResponseWriter, req *http.Request) {
	s, err := d.q.Summary(req.Context())
	if err != nil {
		httpError(w, err)
		return
	}
	name := d.q.Name()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP rjq_jobs Jobs in the queue by status.")
	fmt.Fprintln(w, "# TYPE rjq_jobs gauge")
	for _, kv := range []struct {
		status string
		n      int
	}{{"waiting", s.Waiting}, {"active", s.Active}, {"completed", s.Completed}, {"cancelled", s.Cancelled}, {"failed", s.Failed}, {"terminated", s.Terminated}, {"blocked", s.Blocked}} {
		if s.FinishedUnknown && job.Status(kv.status).Finished() {
			continue // not counted yet: no series rather than a wrong 0
		}
		fmt.Fprintf(w, "rjq_jobs{queue=%q,status=%q} %d\n", name, kv.status, kv.n)
	}
	if s.FinishedUnknown {
		fmt.Fprintf(w, "# rjq_jobs{queue=%q}: finished jobs not counted yet (about %d); a Queue Master's first tally counts them\n", name, s.FinishedEstimate)
	}
	fmt.Fprintln(w, "# HELP rjq_events_total Queue events seen on the table's changefeed since the dashboard started.")
	fmt.Fprintln(w, "# TYPE rjq_events_total counter")
	d.mu.Lock()
	types := make([]string, 0, len(d.counts))
	for t := range d.counts {
		types = append(types, string(t))
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Fprintf(w, "rjq_events_total{queue=%q,type=%q} %d\n", name, t, d.counts[queue.EventType(t)])
	}
	d.mu.Unlock()
	d.runs.WriteTo(req.Context(), w)
}
