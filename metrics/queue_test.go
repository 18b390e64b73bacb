package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/exposition"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// A queue that processes jobs with a Collector as its Metrics: the scrape shows the claims,
// each run's end by status, the durations, and the depth read from the server. The jobs'
// names and groups are no labels: their runs add up in one series each.
func TestCollectorOnAQueue(t *testing.T) {
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := metrics.New()
	q, err := queue.New(ctx, queuetest.ConnectTo(srv, testserver.DB(t)),
		queuetest.Options(queue.Options{Concurrency: 4, Metrics: c}))
	require.NoError(t, err)
	defer func() { _ = q.Stop(context.Background()) }()
	c.Watch(q)

	var jobs []*job.Job
	for i := range 6 {
		j := q.CreateJob(i).SetRetryMax(0).SetName([]string{"welcome", "digest", "reset"}[i%3])
		if i%2 == 0 {
			j.SetGroup([]string{"acme", "globex", "initech"}[i%3])
		}
		jobs = append(jobs, j)
	}
	ended := q.Events(ctx)
	_, err = q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
		var n int
		if err := j.DataAs(&n); err != nil {
			return nil, err
		}
		if n%3 == 0 {
			return nil, errors.New("every third fails")
		}
		return n, nil
	}))
	for seen := 0; seen < len(jobs); {
		select {
		case e := <-ended:
			if e.Type == queue.EventCompleted || e.Type == queue.EventTerminated {
				seen++
			}
		case <-ctx.Done():
			t.Fatal("the jobs did not end")
		}
	}

	srvHTTP := httptest.NewServer(c)
	defer srvHTTP.Close()
	res, err := http.Get(srvHTTP.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := string(body)
	assert.Contains(t, res.Header.Get("Content-Type"), "text/plain")
	name := `queue="` + q.Name() + `"`
	assert.Contains(t, out, `rjq_jobs_claimed_total{`+name+`} 6`)
	assert.Contains(t, out, `rjq_runs_total{`+name+`,status="completed"} 4`)
	assert.Contains(t, out, `rjq_runs_total{`+name+`,status="terminated"} 2`)
	assert.Contains(t, out, `rjq_run_duration_seconds_count{`+name+`} 6`)
	assert.Contains(t, out, `rjq_queue_jobs{`+name+`,status="completed"} 4`)
	assert.Contains(t, out, `rjq_queue_jobs{`+name+`,status="terminated"} 2`)
	assert.Contains(t, out, `rjq_queue_jobs{`+name+`,status="waiting"} 0`)
	_, err = exposition.Check(out)
	assert.NoError(t, err, "each series once")
}

// With NameLabels, a queue's runs are counted by job name: the first names seen, the
// rest as other, and a job whose name is its id as "".
func TestCollectorLabelsRunsByNameOnAQueue(t *testing.T) {
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := metrics.NewWith(metrics.Options{NameLabels: 1})
	q, err := queue.New(ctx, queuetest.ConnectTo(srv, testserver.DB(t)),
		queuetest.Options(queue.Options{Concurrency: 1, Metrics: c}))
	require.NoError(t, err)
	defer func() { _ = q.Stop(context.Background()) }()
	ended := q.Events(ctx, queue.EventCompleted)
	// One at a time, so that "welcome" is the first name seen.
	for _, j := range []*job.Job{q.CreateJob(1).SetName("welcome"), q.CreateJob(2).SetName("welcome"), q.CreateJob(3).SetName("digest"), q.CreateJob(4)} {
		_, err := q.AddJob(ctx, j)
		require.NoError(t, err)
	}
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	for range 4 {
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("the jobs did not end")
		}
	}
	var b strings.Builder
	c.WriteTo(ctx, &b)
	out := b.String()
	name := `queue="` + q.Name() + `"`
	assert.Contains(t, out, `rjq_runs_total{`+name+`,name="welcome",status="completed"} 2`, "the first name seen")
	assert.Contains(t, out, `rjq_runs_total{`+name+`,name="other",status="completed"} 1`, "the second")
	assert.NotContains(t, out, `name="digest"`, "a second name is other")
	assert.Contains(t, out, `rjq_runs_total{`+name+`,name="",status="completed"} 1`, "the job named by its id")
}

// With GroupLabels, the queue gives each run's group (GroupMetrics), and the runs are
// counted by it: a job without a group as "".
func TestCollectorLabelsRunsByGroupOnAQueue(t *testing.T) {
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := metrics.NewWith(metrics.Options{GroupLabels: 10})
	q, err := queue.New(ctx, queuetest.ConnectTo(srv, testserver.DB(t)),
		queuetest.Options(queue.Options{Concurrency: 2, Metrics: c}))
	require.NoError(t, err)
	defer func() { _ = q.Stop(context.Background()) }()
	ended := q.Events(ctx, queue.EventCompleted)
	_, err = q.AddJob(ctx, q.CreateJob(1).SetName("welcome").SetGroup("acme"), q.CreateJob(2).SetName("digest").SetGroup("acme"),
		q.CreateJob(3).SetName("welcome").SetGroup("globex"), q.CreateJob(4))
	require.NoError(t, err)
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	for range 4 {
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("the jobs did not end")
		}
	}
	var b strings.Builder
	c.WriteTo(ctx, &b)
	out := b.String()
	name := `queue="` + q.Name() + `"`
	assert.Contains(t, out, `rjq_runs_total{`+name+`,group="acme",status="completed"} 2`)
	assert.Contains(t, out, `rjq_runs_total{`+name+`,group="globex",status="completed"} 1`)
	assert.Contains(t, out, `rjq_runs_total{`+name+`,group="",status="completed"} 1`, "the job without a group")
	assert.Contains(t, out, `rjq_run_duration_seconds_count{`+name+`,group="acme"} 2`)
	_, err = exposition.Check(out)
	assert.NoError(t, err, "each series once")
}
