// Package metrics serves a queue's measurements in the Prometheus text exposition format,
// with nothing but the standard library: a Collector receives what queues do (it is a
// queue.Metrics, set as Options.Metrics), reads the depth of the queues it watches when
// scraped, and is the http.Handler to mount at /metrics.
//
//	c := metrics.New()
//	q, err := queue.New(ctx, conn, &queue.Options{Metrics: c})
//	c.Watch(q)
//	http.Handle("/metrics", c)
//
// Series: rjq_jobs_claimed_total{queue}, rjq_jobs_deadline_passed_total{queue} (jobs
// cancelled because their start deadline passed), rjq_runs_total{queue,status},
// rjq_run_duration_seconds{queue} (a histogram; both with a bounded name label, a bounded
// group label or both, from a Collector made by NewWith with Options.NameLabels and
// Options.GroupLabels), and, read at each scrape for the watched queues, the gauges
// rjq_queue_jobs{queue,status} (from Queue.Summary), rjq_queue_paused{queue} (1 when
// paused, here or through the State Document) and rjq_queue_oldest_waiting_seconds{queue}
// (how long the oldest due job has waited to be claimed, for queues watched with a
// session: see WatchWith); and of each trigger of the watched queues (Queue.Triggers),
// rjq_trigger_lag_seconds{queue,trigger}, rjq_trigger_jobs_total{queue,trigger} and
// rjq_trigger_skipped_total{queue,trigger}.
//
// The counters and the histogram count what the Collector is told. Set as a queue's
// Options.Metrics, that is what the queues of this process do: each worker process serves
// its own, and their sum over the processes is the table's. Fed from the table's
// changefeed instead (as package rjqweb does, with Options.AllWorkers), they count every
// worker's claims and runs, and one scrape is the table's.
package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Buckets are the upper bounds, in seconds, of the run duration histogram.
var Buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// scrapeTimeout bounds the depth reads of one scrape.
const scrapeTimeout = 5 * time.Second

// Collector counts what queues do and serves it. The zero value is not usable; use New
// or NewWith.
type Collector struct {
	opts    Options
	mu      sync.Mutex
	claimed map[string]uint64
	expired map[string]uint64
	runs    map[runKey]uint64
	hist    map[histKey]*histogram
	watched []watch
	// names and groups are the job names and groups that have a label of their own (see
	// Options).
	names, groups map[string]bool
}

// Options configure a Collector.
type Options struct {
	// NameLabels, when above 0, adds the label name (the job's name) to rjq_runs_total
	// and rjq_run_duration_seconds: the first NameLabels names seen get their own, and
	// every later one counts as "other", so that a queue of many names cannot make a
	// series each. A job whose name is its id (the default) counts as "". 0: no name
	// label, and the runs of every name add up in one series.
	NameLabels int
	// GroupLabels, when above 0, adds the label group (the job's group, job.SetGroup) to
	// rjq_runs_total and rjq_run_duration_seconds, bounded as NameLabels bounds names:
	// the first GroupLabels groups seen get their own, every later one counts as
	// "other", and a job without a group counts as "". 0: no group label, and the runs of
	// every group add up in one series. Only a caller that gives the group
	// (RunEndedGrouped, which a queue calls) is counted by group; the others count as "".
	GroupLabels int
	// AllWorkers says that the Collector is fed every worker's claims and runs, from the
	// table's changefeed (as package rjqweb does), rather than by the queues of this
	// process. It changes the help texts only, so that they say what the counters count.
	AllWorkers bool
}

// otherLabel is the name or group label of the values beyond Options.NameLabels or
// Options.GroupLabels.
const otherLabel = "other"

// watch is a watched queue and how to read it.
type watch struct {
	q    *queue.Queue
	opts WatchOptions
}

// WatchOptions say what a scrape reads of a watched queue beyond its pause.
type WatchOptions struct {
	// Session reads the queue's table directly, for what the queue's API does not tell:
	// the oldest due job (rjq_queue_oldest_waiting_seconds) and the State Document (a
	// global pause that a queue without a changefeed has not heard of). Nil: the oldest
	// waiting job is not reported, and rjq_queue_paused is Queue.Paused alone.
	Session r.QueryExecutor
	// NoDepth leaves the queue out of rjq_queue_jobs, for a server that reports its
	// counts under another name already (the rjqweb dashboard's rjq_jobs), so that a
	// scrape does not count the queue twice.
	NoDepth bool
}

// runKey and histKey are the label values of a series of rjq_runs_total and of
// rjq_run_duration_seconds; name and group are "" when they are no label.
type runKey struct{ queue, name, group, status string }

type histKey struct{ queue, name, group string }

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

var _ queue.NamedMetrics = (*Collector)(nil)
var _ queue.GroupMetrics = (*Collector)(nil)
var _ queue.ExpiryMetrics = (*Collector)(nil)

// New returns an empty Collector with no name label.
func New() *Collector { return NewWith(Options{}) }

// NewWith returns an empty Collector configured by opts.
func NewWith(opts Options) *Collector {
	return &Collector{opts: opts, claimed: map[string]uint64{}, expired: map[string]uint64{}, runs: map[runKey]uint64{}, hist: map[histKey]*histogram{}, names: map[string]bool{}, groups: map[string]bool{}}
}

// JobsClaimed implements queue.Metrics.
func (c *Collector) JobsClaimed(q string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claimed[q] += uint64(n)
}

// JobsExpired implements queue.ExpiryMetrics: n jobs of queue q cancelled because their
// start deadline passed.
func (c *Collector) JobsExpired(q string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expired[q] += uint64(n)
}

// RunEnded implements queue.Metrics: a run of a job without a name of its own.
func (c *Collector) RunEnded(q string, status job.Status, runTime time.Duration) {
	c.RunEndedNamed(q, "", status, runTime)
}

// RunEndedNamed implements queue.NamedMetrics: a run of a job without a group.
func (c *Collector) RunEndedNamed(q, name string, status job.Status, runTime time.Duration) {
	c.RunEndedGrouped(q, name, "", status, runTime)
}

// RunEndedGrouped implements queue.GroupMetrics.
func (c *Collector) RunEndedGrouped(q, name, group string, status job.Status, runTime time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name = bounded(name, c.opts.NameLabels, c.names)
	group = bounded(group, c.opts.GroupLabels, c.groups)
	c.runs[runKey{q, name, group, string(status)}]++
	hk := histKey{q, name, group}
	h := c.hist[hk]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(Buckets)+1)}
		c.hist[hk] = h
	}
	s := runTime.Seconds()
	i, _ := slices.BinarySearch(Buckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

// bounded is the label value of v, a job's name or group, with a label of at most limit
// values: v itself while it is "" or among the first limit values seen (kept in seen),
// otherLabel beyond. With no label (limit 0 or below) it is "", so that the runs of every
// value add up in one series rather than in series whose labels are the same.
func bounded(v string, limit int, seen map[string]bool) string {
	switch {
	case limit <= 0:
		return ""
	case v == "" || seen[v]:
		return v
	case len(seen) < limit:
		seen[v] = true
		return v
	}
	return otherLabel
}

// Watch adds q to the queues whose depth (one grouped count on the status index per
// queue) and pause each scrape reads. It is WatchWith with no options.
func (c *Collector) Watch(q *queue.Queue) { c.WatchWith(q, WatchOptions{}) }

// WatchWith adds q to the queues each scrape reads, as opts say.
func (c *Collector) WatchWith(q *queue.Queue, opts WatchOptions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched = append(c.watched, watch{q, opts})
}

// ServeHTTP writes every series in the Prometheus text format. A queue whose depth cannot
// be read is left out of rjq_queue_jobs, and the failure is reported as a comment.
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
	defer cancel()
	c.WriteTo(ctx, w)
}

// WriteTo writes every series to w in the Prometheus text format, reading the depth of
// the watched queues with ctx.
func (c *Collector) WriteTo(ctx context.Context, w io.Writer) {
	var b strings.Builder
	c.mu.Lock()
	c.writeCounts(&b)
	watched := slices.Clone(c.watched)
	c.mu.Unlock()

	header(&b, "rjq_queue_jobs", "gauge", "Jobs in the queue by status, read at the scrape.")
	for _, wq := range watched {
		if wq.opts.NoDepth {
			continue
		}
		q := wq.q
		s, err := q.Summary(ctx)
		if err != nil {
			fmt.Fprintf(&b, "# rjq_queue_jobs{queue=%s}: %s\n", label(q.Name()), strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		for _, kv := range []struct {
			status job.Status
			n      int
		}{{job.Waiting, s.Waiting}, {job.Active, s.Active}, {job.Completed, s.Completed},
			{job.Cancelled, s.Cancelled}, {job.Failed, s.Failed}, {job.Terminated, s.Terminated}, {job.Blocked, s.Blocked}} {
			if s.FinishedUnknown && kv.status.Finished() {
				continue // not counted yet: no series rather than a wrong 0
			}
			fmt.Fprintf(&b, "rjq_queue_jobs{queue=%s,status=%s} %d\n", label(q.Name()), label(string(kv.status)), kv.n)
		}
		if s.FinishedUnknown {
			fmt.Fprintf(&b, "# rjq_queue_jobs{queue=%s}: finished jobs not counted yet (about %d); a Queue Master's first tally counts them\n", label(q.Name()), s.FinishedEstimate)
		}
	}
	writeState(ctx, &b, watched)
	writeTriggers(ctx, &b, watched)
	_, _ = io.WriteString(w, b.String())
}

// The help texts of the counted series: what the queues of this process did, or, with
// Options.AllWorkers, what every worker did.
var (
	helpClaimed        = [2]string{"Jobs claimed by this process.", "Jobs claimed by any worker of the queue, as its table's changefeed shows them."}
	helpDeadlinePassed = [2]string{"Jobs this process cancelled because their start deadline passed.", "Jobs cancelled because their start deadline passed, by any worker of the queue, as its table's changefeed shows them."}
	helpRuns           = [2]string{"Runs that ended in this process, by the status the job moved to.", "Runs that ended on any worker of the queue, as its table's changefeed shows them, by the status the job moved to."}
	helpDuration       = [2]string{"How long runs took in this process, from claim to outcome.", "How long runs took on any worker of the queue, from claim to outcome."}
)

// writeCounts writes the counted series to b; c.mu must be held.
func (c *Collector) writeCounts(b *strings.Builder) {
	scope := boolInt(c.opts.AllWorkers)
	header(b, "rjq_jobs_claimed_total", "counter", helpClaimed[scope])
	for _, q := range sortedKeys(c.claimed) {
		fmt.Fprintf(b, "rjq_jobs_claimed_total{queue=%s} %d\n", label(q), c.claimed[q])
	}
	header(b, "rjq_jobs_deadline_passed_total", "counter", helpDeadlinePassed[scope])
	for _, q := range sortedKeys(c.expired) {
		fmt.Fprintf(b, "rjq_jobs_deadline_passed_total{queue=%s} %d\n", label(q), c.expired[q])
	}
	header(b, "rjq_runs_total", "counter", helpRuns[scope])
	keys := slices.Collect(maps.Keys(c.runs))
	slices.SortFunc(keys, func(x, y runKey) int {
		return cmp.Or(strings.Compare(x.queue, y.queue), strings.Compare(x.name, y.name),
			strings.Compare(x.group, y.group), strings.Compare(x.status, y.status))
	})
	for _, k := range keys {
		fmt.Fprintf(b, "rjq_runs_total{%s,status=%s} %d\n", c.labels(k.queue, k.name, k.group), label(k.status), c.runs[k])
	}
	header(b, "rjq_run_duration_seconds", "histogram", helpDuration[scope])
	hkeys := slices.Collect(maps.Keys(c.hist))
	slices.SortFunc(hkeys, func(x, y histKey) int {
		return cmp.Or(strings.Compare(x.queue, y.queue), strings.Compare(x.name, y.name), strings.Compare(x.group, y.group))
	})
	for _, k := range hkeys {
		h, ls := c.hist[k], c.labels(k.queue, k.name, k.group)
		var cum uint64
		for i, le := range Buckets {
			cum += h.counts[i]
			fmt.Fprintf(b, "rjq_run_duration_seconds_bucket{%s,le=%q} %d\n", ls, strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(b, "rjq_run_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", ls, h.n)
		fmt.Fprintf(b, "rjq_run_duration_seconds_sum{%s} %s\n", ls, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(b, "rjq_run_duration_seconds_count{%s} %d\n", ls, h.n)
	}
}

// writeState writes the gauges of the watched queues' state: paused, and the age of the
// oldest due job.
func writeState(ctx context.Context, b *strings.Builder, watched []watch) {
	header(b, "rjq_queue_paused", "gauge", "1 when the queue is paused, by its own Pause or for every queue of the table through the State Document, else 0.")
	for _, wq := range watched {
		paused := wq.q.Paused()
		if !paused && wq.opts.Session != nil {
			var err error
			if paused, err = GloballyPaused(ctx, wq.opts.Session, table(wq.q)); err != nil {
				fmt.Fprintf(b, "# rjq_queue_paused{queue=%s}: %s\n", label(wq.q.Name()), oneLine(err))
				continue
			}
		}
		fmt.Fprintf(b, "rjq_queue_paused{queue=%s} %d\n", label(wq.q.Name()), boolInt(paused))
	}
	header(b, "rjq_queue_oldest_waiting_seconds", "gauge", "How long the oldest job that is due (waiting, or failed and due for its retry) has waited since its dateEnable; 0 when none.")
	for _, wq := range watched {
		if wq.opts.Session == nil {
			continue
		}
		age, err := OldestWaiting(ctx, wq.opts.Session, table(wq.q), time.Now())
		if err != nil {
			fmt.Fprintf(b, "# rjq_queue_oldest_waiting_seconds{queue=%s}: %s\n", label(wq.q.Name()), oneLine(err))
			continue
		}
		fmt.Fprintf(b, "rjq_queue_oldest_waiting_seconds{queue=%s} %s\n", label(wq.q.Name()), strconv.FormatFloat(age.Seconds(), 'f', 3, 64))
	}
}

// labels are the queue label of a series, and its name and group labels when Options
// asks for them.
func (c *Collector) labels(q, name, group string) string {
	ls := "queue=" + label(q)
	if c.opts.NameLabels > 0 {
		ls += ",name=" + label(name)
	}
	if c.opts.GroupLabels > 0 {
		ls += ",group=" + label(group)
	}
	return ls
}

func table(q *queue.Queue) r.Term { return r.DB(q.DB()).Table(q.Name()) }

// OldestWaiting returns how long the oldest due job of a queue's table has waited since
// its dateEnable, as of now: among waiting jobs, and failed jobs whose retry is due, the
// ones a worker would claim; 0 when there is none. It reads at most one entry per
// priority of the Node.js library's index indexInactivePriorityDateCreated, which orders
// each priority's jobs by dateEnable: a few index reads, never a scan, however long the
// queue. (Jobs of a priority other than the six named ones are not seen.) It takes the
// original's index rather than this library's claim index so that it works on tables
// only the Node.js library has written.
func OldestWaiting(ctx context.Context, s r.QueryExecutor, table r.Term, now time.Time) (time.Duration, error) {
	return rdb.OldestWaiting(ctx, s, table, now)
}

// GloballyPaused reports whether the State Document of a queue's table says that every
// queue of the table is paused (a global Pause, from any process or language).
func GloballyPaused(ctx context.Context, s r.QueryExecutor, table r.Term) (bool, error) {
	cur, err := table.Get(job.StateDocumentID).Field("state").Default("").Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return false, err
	}
	var state string
	if err := cur.One(&state); err != nil && !errors.Is(err, r.ErrEmptyResult) {
		return false, err
	}
	return state == "paused", nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func header(b *strings.Builder, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// label quotes a label value as the text format wants: backslash, double quote and
// newline escaped.
func label(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeTriggers writes the series of the watched queues' triggers, from Queue.Triggers
// (one index read a trigger): how far behind each is, and the jobs it made and the
// versions it skipped.
func writeTriggers(ctx context.Context, b *strings.Builder, watched []watch) {
	type row struct {
		q, name       string
		lag           float64
		jobs, skipped int64
	}
	var rows []row
	for _, wq := range watched {
		ts, err := wq.q.Triggers(ctx)
		if err != nil {
			fmt.Fprintf(b, "# rjq_trigger_lag_seconds{queue=%s}: %s\n", label(wq.q.Name()), oneLine(err))
			continue
		}
		for _, t := range ts {
			rows = append(rows, row{wq.q.Name(), t.Name, t.Lag.Seconds(), t.Jobs, t.Skipped})
		}
	}
	header(b, "rjq_trigger_lag_seconds", "gauge", "How far behind a trigger is: the age of the first version of its table past its cursor.")
	for _, r := range rows {
		fmt.Fprintf(b, "rjq_trigger_lag_seconds{queue=%s,trigger=%s} %s\n", label(r.q), label(r.name), strconv.FormatFloat(r.lag, 'f', 3, 64))
	}
	header(b, "rjq_trigger_jobs_total", "counter", "Jobs a trigger made, one a version of its table's documents.")
	for _, r := range rows {
		fmt.Fprintf(b, "rjq_trigger_jobs_total{queue=%s,trigger=%s} %d\n", label(r.q), label(r.name), r.jobs)
	}
	header(b, "rjq_trigger_skipped_total", "counter", "Versions a trigger skipped: a document without a time or a number, a func that failed, a job refused.")
	for _, r := range rows {
		fmt.Fprintf(b, "rjq_trigger_skipped_total{queue=%s,trigger=%s} %d\n", label(r.q), label(r.name), r.skipped)
	}
}
