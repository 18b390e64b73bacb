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
// Series: rjq_jobs_claimed_total{queue}, rjq_runs_total{queue,status},
// rjq_run_duration_seconds{queue} (a histogram), and rjq_queue_jobs{queue,status} (a
// gauge read from Queue.Summary at each scrape).
package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Buckets are the upper bounds, in seconds, of the run duration histogram.
var Buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// scrapeTimeout bounds the depth reads of one scrape.
const scrapeTimeout = 5 * time.Second

// Collector counts what queues do and serves it. The zero value is not usable; use New.
type Collector struct {
	mu      sync.Mutex
	claimed map[string]uint64
	runs    map[runKey]uint64
	hist    map[string]*histogram
	watched []*queue.Queue
}

type runKey struct{ queue, status string }

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

var _ queue.Metrics = (*Collector)(nil)

// New returns an empty Collector.
func New() *Collector {
	return &Collector{claimed: map[string]uint64{}, runs: map[runKey]uint64{}, hist: map[string]*histogram{}}
}

// JobsClaimed implements queue.Metrics.
func (c *Collector) JobsClaimed(q string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claimed[q] += uint64(n)
}

// RunEnded implements queue.Metrics.
func (c *Collector) RunEnded(q string, status job.Status, runTime time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[runKey{q, string(status)}]++
	h := c.hist[q]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(Buckets)+1)}
		c.hist[q] = h
	}
	s := runTime.Seconds()
	i, _ := slices.BinarySearch(Buckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

// Watch adds q to the queues whose depth each scrape reads (one grouped count on the
// status index per queue).
func (c *Collector) Watch(q *queue.Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched = append(c.watched, q)
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
	c.mu.Lock()
	claimed := sortedKeys(c.claimed)
	var b strings.Builder
	header(&b, "rjq_jobs_claimed_total", "counter", "Jobs claimed by this process.")
	for _, q := range claimed {
		fmt.Fprintf(&b, "rjq_jobs_claimed_total{queue=%s} %d\n", label(q), c.claimed[q])
	}
	header(&b, "rjq_runs_total", "counter", "Runs that ended in this process, by the status the job moved to.")
	keys := make([]runKey, 0, len(c.runs))
	for k := range c.runs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runKey) int {
		return strings.Compare(a.queue+"\x00"+a.status, b.queue+"\x00"+b.status)
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "rjq_runs_total{queue=%s,status=%s} %d\n", label(k.queue), label(k.status), c.runs[k])
	}
	header(&b, "rjq_run_duration_seconds", "histogram", "How long runs took, from claim to outcome.")
	for _, q := range sortedKeys(c.hist) {
		h := c.hist[q]
		var cum uint64
		for i, le := range Buckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "rjq_run_duration_seconds_bucket{queue=%s,le=%q} %d\n", label(q), strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(&b, "rjq_run_duration_seconds_bucket{queue=%s,le=\"+Inf\"} %d\n", label(q), h.n)
		fmt.Fprintf(&b, "rjq_run_duration_seconds_sum{queue=%s} %s\n", label(q), strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(&b, "rjq_run_duration_seconds_count{queue=%s} %d\n", label(q), h.n)
	}
	watched := slices.Clone(c.watched)
	c.mu.Unlock()

	header(&b, "rjq_queue_jobs", "gauge", "Jobs in the queue by status, read at the scrape.")
	for _, q := range watched {
		s, err := q.Summary(ctx)
		if err != nil {
			fmt.Fprintf(&b, "# rjq_queue_jobs{queue=%s}: %s\n", label(q.Name()), strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		for _, kv := range []struct {
			status job.Status
			n      int
		}{{job.Waiting, s.Waiting}, {job.Active, s.Active}, {job.Completed, s.Completed},
			{job.Cancelled, s.Cancelled}, {job.Failed, s.Failed}, {job.Terminated, s.Terminated}} {
			fmt.Fprintf(&b, "rjq_queue_jobs{queue=%s,status=%s} %d\n", label(q.Name()), label(string(kv.status)), kv.n)
		}
	}
	_, _ = io.WriteString(w, b.String())
}

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
