package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// rjq web's /metrics counts the claims and run ends of a worker in another process (here,
// a library queue in the test), with their durations, and the queue's depth.
func TestWebMetrics(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "metered"
	lib, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{Name: name, MasterInterval: -1}))
	require.NoError(t, err)
	defer func() { _ = lib.Stop(context.Background()) }()
	require.NoError(t, lib.Ready(ctx))
	url := startWeb(t, binary(t), []string{"--addr", addr, "--db", db, "--queue", name})
	scrape := func() string {
		res, err := http.Get(url + "metrics")
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(b)
	}
	events := lib.Events(ctx, queue.EventCompleted, queue.EventTerminated)
	require.NoError(t, lib.Process(func(_ context.Context, j *job.Job) (any, error) {
		time.Sleep(20 * time.Millisecond) // a run that takes a measurable time
		if j.Data == float64(3) {
			return nil, errors.New("three fails")
		}
		return nil, nil
	}))
	run := func(jobs ...*job.Job) {
		t.Helper()
		_, err := lib.AddJob(ctx, jobs...)
		require.NoError(t, err)
		for range jobs {
			select {
			case <-events:
			case <-ctx.Done():
				t.Fatal("the jobs did not end")
			}
		}
	}
	// rjq's feed opens in the background: run probe jobs until it has seen one.
	require.Eventually(t, func() bool {
		run(lib.CreateJob(0))
		return value(scrape(), `rjq_runs_total{queue="metered",status="completed"}`) > 0
	}, 30*time.Second, 100*time.Millisecond)
	base := scrape()
	run(lib.CreateJob(1).SetRetryMax(0), lib.CreateJob(2).SetRetryMax(0), lib.CreateJob(3).SetRetryMax(0))
	want := map[string]int{
		`rjq_jobs_claimed_total{queue="metered"}`:                    3,
		`rjq_runs_total{queue="metered",status="completed"}`:         2,
		`rjq_runs_total{queue="metered",status="terminated"}`:        1,
		`rjq_run_duration_seconds_count{queue="metered"}`:            3,
		`rjq_run_duration_seconds_bucket{queue="metered",le="0.01"}`: 0,
	}
	var out string
	require.Eventually(t, func() bool {
		out = scrape()
		for series, n := range want {
			if value(out, series)-value(base, series) != n {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "the scrape shows the three runs")
	assert.Contains(t, out, "# TYPE rjq_run_duration_seconds histogram")
	assert.Equal(t, value(base, `rjq_jobs{queue="metered",status="completed"}`)+2, value(out, `rjq_jobs{queue="metered",status="completed"}`))
}

// value is the sample of series in a scrape, 0 when absent.
func value(scrape, series string) int {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
