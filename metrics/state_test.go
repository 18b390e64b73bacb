package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// sample is the value of series in a scrape, and whether it is there.
func sample(scrape, series string) (float64, bool) {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// The state gauges: the age of the oldest due job, read through the index (a job not yet
// due, of any priority, does not count), 0 on an empty queue; and the pause, from the
// queue itself or, for a queue that has not heard of a global pause, the State Document.
func TestQueueStateGauges(t *testing.T) {
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testserver.DB(t)
	s := testserver.Session(t)
	open := func(name string, feed bool) *queue.Queue {
		q, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
			queuetest.Options(queue.Options{Name: name, MasterInterval: -1, Heartbeat: -1, NoChangeFeed: !feed}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		require.NoError(t, q.Ready(ctx))
		return q
	}
	busy, other, empty := open("busy", true), open("busy", false), open("empty", false)
	_, err := busy.AddJob(ctx,
		busy.CreateJob(1).SetPriority(job.Low).SetDateEnable(time.Now().Add(-90*time.Second)),
		busy.CreateJob(2).SetPriority(job.Highest).SetDateEnable(time.Now().Add(-30*time.Second)),
		busy.CreateJob(3).SetPriority(job.Lowest).SetDateEnable(time.Now().Add(-time.Hour)).SetName("not due"),
		busy.CreateJob(4).SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	// The third is taken out of the waiting jobs, as a running job is.
	_, err = busy.CancelJob(ctx, "not waiting", mustFind(ctx, t, busy, "not due"))
	require.NoError(t, err)

	// busy is not watched: it writes. other, on the same table without a changefeed, is
	// watched with a session, and empty without one.
	c := metrics.New()
	c.WatchWith(other, metrics.WatchOptions{Session: s, NoDepth: true})
	c.WatchWith(empty, metrics.WatchOptions{Session: s})
	h := httptest.NewServer(c)
	defer h.Close()
	scrape := func() string {
		res, err := http.Get(h.URL)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(b)
	}

	out := scrape()
	for _, name := range []string{"rjq_queue_oldest_waiting_seconds", "rjq_queue_paused"} {
		assert.Equal(t, 1, strings.Count(out, "# HELP "+name+" "), out)
		assert.Contains(t, out, "# TYPE "+name+" gauge")
	}
	age, ok := sample(out, `rjq_queue_oldest_waiting_seconds{queue="busy"}`)
	require.True(t, ok, out)
	assert.InDelta(t, 90, age, 10, "the low priority job enabled 90 s ago, not the cancelled one nor the later one")
	age, ok = sample(out, `rjq_queue_oldest_waiting_seconds{queue="empty"}`)
	require.True(t, ok, out)
	assert.Zero(t, age)
	assert.NotContains(t, out, `rjq_queue_jobs{queue="busy"`, "NoDepth leaves the queue out of the depth")
	assert.Contains(t, out, `rjq_queue_jobs{queue="empty",status="waiting"} 0`)
	for _, q := range []string{"busy", "empty"} {
		v, ok := sample(out, `rjq_queue_paused{queue="`+q+`"}`)
		assert.True(t, ok && v == 0, "%s: %s", q, out)
	}

	// A global pause by busy: other, without a changefeed, has not heard of it, and the
	// State Document tells. A local pause of empty: the queue tells.
	require.NoError(t, busy.Pause(ctx, true))
	require.False(t, other.Paused())
	require.NoError(t, empty.Pause(ctx, false))
	out = scrape()
	assert.Contains(t, out, `rjq_queue_paused{queue="busy"} 1`)
	assert.Contains(t, out, `rjq_queue_paused{queue="empty"} 1`)
	require.NoError(t, busy.Resume(ctx, true))
	require.NoError(t, empty.Resume(ctx, false))
	out = scrape()
	assert.Contains(t, out, `rjq_queue_paused{queue="busy"} 0`)
	assert.Contains(t, out, `rjq_queue_paused{queue="empty"} 0`)

	later, err := metrics.OldestWaiting(ctx, s, r.DB(db).Table("busy"), time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	assert.InDelta(t, (2*time.Hour + 90*time.Second).Seconds(), later.Seconds(), 10, "two hours on, the oldest is still the first")
}

func mustFind(ctx context.Context, t *testing.T, q *queue.Queue, name string) string {
	t.Helper()
	jobs, err := q.FindJobByName(ctx, name)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0].ID
}

// A watched queue's triggers have their lag, jobs and skips in every scrape.
func TestTriggerSeries(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx := context.Background()
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{Name: "watched", MasterInterval: time.Hour}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	require.NoError(t, q.Ready(ctx))
	s := testserver.Session(t)
	orders := r.DB(db).Table("orders")
	require.NoError(t, r.DB(db).TableCreate("orders").Exec(s))
	require.NoError(t, orders.IndexCreate("updatedAt").Exec(s))
	require.NoError(t, orders.IndexWait().Exec(s))
	require.NoError(t, q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt",
		Job: func(context.Context, map[string]any) (*job.Job, error) { return q.CreateJob(nil), nil }}))
	require.NoError(t, orders.Insert(map[string]any{"id": "o1", "updatedAt": r.Now()}).Exec(s))
	c := metrics.New()
	c.Watch(q)
	require.Eventually(t, func() bool {
		return strings.Contains(triggerScrape(c), `rjq_trigger_jobs_total{queue="watched",trigger="orders"} 1`)
	}, 20*time.Second, 100*time.Millisecond, triggerScrape(c))
	out := triggerScrape(c)
	assert.Contains(t, out, "# TYPE rjq_trigger_lag_seconds gauge\n")
	assert.Regexp(t, `rjq_trigger_lag_seconds\{queue="watched",trigger="orders"\} \d+\.\d{3}\n`, out)
	assert.Contains(t, out, `rjq_trigger_skipped_total{queue="watched",trigger="orders"} 0`)
}

func triggerScrape(c *metrics.Collector) string {
	var b strings.Builder
	c.WriteTo(context.Background(), &b)
	return b.String()
}
