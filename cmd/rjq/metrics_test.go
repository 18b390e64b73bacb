package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/exposition"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// meteredQueue is a library queue that runs jobs in the test, watched by `rjq web`.
type meteredQueue struct {
	lib    *queue.Queue
	url    string // rjq web's dashboard
	ctx    context.Context
	events <-chan queue.Event
}

// startMetered opens the queue "metered" on a database of the test's own, processes its
// jobs (a job whose data is 3 fails, every run takes 20 ms) and starts bin's `rjq web`
// with the web flags on it.
func startMetered(t *testing.T, bin string, web ...string) *meteredQueue {
	t.Helper()
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	const name = "metered"
	lib, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{Name: name, MasterInterval: -1}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lib.Stop(context.Background()) })
	require.NoError(t, lib.Ready(ctx))
	m := &meteredQueue{lib: lib, ctx: ctx, events: lib.Events(ctx, queue.EventCompleted, queue.EventTerminated)}
	m.url = startWeb(t, bin, []string{"--addr", addr, "--db", db, "--queue", name}, web...)
	require.NoError(t, lib.Process(func(_ context.Context, j *job.Job) (any, error) {
		time.Sleep(20 * time.Millisecond) // a run that takes a measurable time
		if j.Data == float64(3) {
			return nil, errors.New("three fails")
		}
		return nil, nil
	}))
	// rjq's feed opens in the background: run probe jobs until it has seen one.
	m.run(t, lib.CreateJob(0))
	m.waitScrape(t, "rjq web counts a run", func(_ int, runs map[string]int, _ int) bool {
		if runs["completed"] > 0 {
			return true
		}
		m.run(t, lib.CreateJob(0))
		return false
	})
	return m
}

// scrape reads rjq web's /metrics.
func (m *meteredQueue) scrape(t *testing.T) string {
	t.Helper()
	res, err := http.Get(m.url + "metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// run adds jobs and waits until each has completed or been terminated.
func (m *meteredQueue) run(t *testing.T, jobs ...*job.Job) {
	t.Helper()
	_, err := m.lib.AddJob(m.ctx, jobs...)
	require.NoError(t, err)
	for range jobs {
		select {
		case <-m.events:
		case <-m.ctx.Done():
			t.Fatal("the jobs did not end")
		}
	}
}

// totals checks a scrape (each series once, help and type before the samples, histograms
// that add up) and returns its claims, runs by status and runs timed, each added up over
// the series of every name and group.
func totals(scrape string) (claimed int, runs map[string]int, timed int, err error) {
	samples, err := exposition.Check(scrape)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%w\nin the scrape:\n%s", err, scrape)
	}
	runs = map[string]int{}
	for _, s := range samples {
		switch s.Name {
		case "rjq_jobs_claimed_total":
			claimed += int(s.Value)
		case "rjq_runs_total":
			runs[s.Labels["status"]] += int(s.Value)
		case "rjq_run_duration_seconds_count":
			timed += int(s.Value)
		}
	}
	return claimed, runs, timed, nil
}

// waitScrape scrapes m until done says the totals of a scrape are what the test waits for,
// and returns that scrape; it fails the test on a scrape that breaks the format, or when
// 30 s pass.
func (m *meteredQueue) waitScrape(t *testing.T, what string, done func(claimed int, runs map[string]int, timed int) bool) string {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		out := m.scrape(t)
		claimed, runs, timed, err := totals(out)
		require.NoError(t, err)
		if done(claimed, runs, timed) {
			return out
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within 30 s; the last scrape:\n%s", what, out)
		}
	}
}

// labelValues are the values label takes on rjq_runs_total in a scrape, sorted.
func labelValues(t *testing.T, scrape, label string) []string {
	t.Helper()
	samples, err := exposition.Check(scrape)
	require.NoError(t, err)
	var values []string
	for _, s := range samples {
		if v, ok := s.Labels[label]; ok && s.Name == "rjq_runs_total" && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	slices.Sort(values)
	return values
}

// rjq web's /metrics counts the claims and run ends of a worker in another process (here,
// a library queue in the test), with their durations, and the queue's depth. Jobs of
// several names and groups: each series appears once, with and without name and group
// labels, and the series add up to the runs.
func TestWebMetrics(t *testing.T) {
	bin := binary(t)
	for _, tt := range []struct {
		flags         []string
		names, groups []string // the label values, nil for no label
		emptyBucket   string   // a bucket series with no run in it, when there is one label set
	}{
		{flags: nil, emptyBucket: `rjq_run_duration_seconds_bucket{queue="metered",le="0.01"}`},
		{flags: []string{"--metric-names", "5"}, names: []string{"", "digest", "reset", "welcome"}},
		{flags: []string{"--metric-names", "1", "--metric-groups", "1"}, names: []string{"", "other", "welcome"}, groups: []string{"", "acme", "other"}},
		{flags: []string{"--metric-groups", "5"}, groups: []string{"", "acme", "globex"}},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tt.flags...), " "), func(t *testing.T) {
			m := startMetered(t, bin, tt.flags...)
			base := m.scrape(t)
			claimed0, runs0, timed0, err := totals(base)
			require.NoError(t, err)
			// One at a time, so that "welcome" and "acme" are the first name and group seen.
			m.run(t, m.lib.CreateJob(1).SetRetryMax(0).SetName("welcome").SetGroup("acme"))
			m.run(t, m.lib.CreateJob(2).SetRetryMax(0).SetName("digest").SetGroup("globex"),
				m.lib.CreateJob(3).SetRetryMax(0).SetName("reset").SetGroup("acme"))
			out := m.waitScrape(t, "the scrape shows the three runs", func(claimed int, runs map[string]int, timed int) bool {
				return claimed-claimed0 == 3 && runs["completed"]-runs0["completed"] == 2 &&
					runs["terminated"]-runs0["terminated"] == 1 && timed-timed0 == 3
			})
			assert.Equal(t, tt.names, labelValues(t, out, "name"), "name label values")
			assert.Equal(t, tt.groups, labelValues(t, out, "group"), "group label values")
			if tt.emptyBucket != "" {
				assert.Equal(t, value(base, tt.emptyBucket), value(out, tt.emptyBucket), "runs of 20 ms are not in the 10 ms bucket")
			}
			assert.Contains(t, out, "# TYPE rjq_run_duration_seconds histogram")
			assert.Contains(t, out, "# HELP rjq_runs_total Runs that ended on any worker of the queue")
			assert.Equal(t, value(base, `rjq_jobs{queue="metered",status="completed"}`)+2, value(out, `rjq_jobs{queue="metered",status="completed"}`))
		})
	}
}

// A scrape of rjq web's /metrics, after runs of 20 job names and 50 groups, passes
// Prometheus's own checker, with and without name and group labels.
func TestWebMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on the PATH (Debian: apt-get install prometheus): the scrape is not checked by Prometheus's own tool")
	}
	bin := binary(t)
	for _, flags := range [][]string{nil, {"--metric-names", "10", "--metric-groups", "30"}, {"--metric-names", "30", "--metric-groups", "60"}} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			m := startMetered(t, bin, flags...)
			_, _, timed0, err := totals(m.scrape(t))
			require.NoError(t, err)
			jobs := make([]*job.Job, 100)
			for i := range jobs {
				jobs[i] = m.lib.CreateJob(i%5 + 1).SetRetryMax(0).SetName(fmt.Sprintf("name-%02d", i%20)).SetGroup(fmt.Sprintf("group-%02d", i%50))
			}
			m.run(t, jobs...)
			out := m.waitScrape(t, "the scrape shows the runs", func(_ int, _ map[string]int, timed int) bool {
				return timed-timed0 == len(jobs)
			})
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(out)
			report, err := cmd.CombinedOutput()
			assert.NoError(t, err, "promtool check metrics: %s", report)
			assert.Empty(t, strings.TrimSpace(string(report)), "promtool has no remarks")
		})
	}
}

// A negative label bound is a usage error, not a silent "no label".
func TestWebMetricFlagsRefuseNegatives(t *testing.T) {
	for _, args := range [][]string{{"--metric-names", "-1"}, {"--metric-groups", "-5"}} {
		err := cmdWeb(context.Background(), config{}, args, io.Discard)
		var ue usageError
		require.ErrorAs(t, err, &ue, "%v", args)
		assert.Contains(t, err.Error(), "want 0 (no label) or more")
	}
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
