package queue_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// TestHelperRateWorkerProcess is not a test: it is a worker process of
// TestAGroupRateHoldsAcrossWorkerProcesses, which starts four and SIGKILLs one. Each runs
// four jobs at a time, each for 300 ms, with a heartbeat of 2 s.
func TestHelperRateWorkerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_RATE_DB", "a worker process of the group rate test",
		queue.Options{MasterInterval: -1, Heartbeat: 2 * time.Second, Concurrency: 4})
	require.NoError(t, q.Process(func(ctx context.Context, _ *job.Job) (any, error) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil, nil
	}))
	select {} // until killed
}

// ratePer is the span of the group rate tested: 3 s, or RJQ_TEST_RATE_PER (such as 1m,
// to measure the rate of 10 a minute).
func ratePer(t *testing.T) time.Duration {
	if s := os.Getenv("RJQ_TEST_RATE_PER"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		return d
	}
	return 3 * time.Second
}

// A group's rate (10 starts per span) and its running limit (3) hold together across four
// worker processes, one of them SIGKILLed mid-run: no span of the rate holds more than 10
// starts of the group, no more than 3 of its runs overlap, and every job completes; a
// group without limits runs beside it.
func TestAGroupRateHoldsAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	per := ratePer(t)
	f := newFixture(t, &queue.Options{MasterInterval: time.Second, Heartbeat: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+12*per)
	defer cancel()
	require.NoError(t, f.q.SetGroupRate(ctx, "tenant", 10, per))
	require.NoError(t, f.q.SetGroupLimit(ctx, "tenant", 3))
	rates, err := f.q.GroupRates(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.GroupRate{"tenant": {Starts: 10, Per: per}}, rates)
	var jobs []*job.Job
	for i := range 40 {
		jobs = append(jobs, f.q.CreateJob(i).SetGroup("tenant"))
	}
	for i := range 8 {
		jobs = append(jobs, f.q.CreateJob(i).SetGroup("other"))
	}
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	var workers []*os.Process
	for range 4 {
		workers = append(workers, helperProcess(t, "TestHelperRateWorkerProcess", "RJQ_HELPER_RATE_DB", f.db, f.srv.Addr).Process)
	}
	// Kill the first worker seen running a job: its runs' starts stay counted, and its
	// slots come back when their leases end.
	var dead *os.Process
	require.Eventually(t, func() bool {
		for _, w := range workers {
			if activeOf(t, f, jobs, w.Pid) > 0 {
				dead = w
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "a worker process runs a job")
	require.NoError(t, dead.Kill())
	// A dead run's slot comes back when its lease ends, at least Heartbeat/2 + 1 s after
	// its last renewal: its span ends then for the count of runs at once, not at the
	// Master's failure entry.
	deadEnd := time.Now().Add(2 * time.Second)

	require.Eventually(t, func() bool {
		for _, j := range jobs {
			if f.get(t, j.ID).Status != job.Completed {
				return false
			}
		}
		return true
	}, 3*time.Minute+12*per, 200*time.Millisecond, "every job completes")
	var starts []time.Time
	var runs [][2]time.Time
	for _, j := range jobs[:40] {
		s, r := runsOf(f.get(t, j.ID), dead.Pid, deadEnd)
		starts, runs = append(starts, s...), append(runs, r...)
	}
	most := mostInSpan(starts, per)
	t.Logf("%d starts of the group; most in any %v: %d; most runs at once: %d", len(starts), per, most, mostAtOnce(runs))
	assert.LessOrEqual(t, most, 10, "the rate")
	assert.GreaterOrEqual(t, most, 5, "the rate is used, not starved")
	assert.LessOrEqual(t, mostAtOnce(runs), 3, "the running limit")
}

// activeOf counts the jobs of jobs active in a queue of the process pid.
func activeOf(t *testing.T, f fixture, jobs []*job.Job, pid int) int {
	t.Helper()
	n := 0
	for _, j := range jobs {
		got := f.get(t, j.ID)
		if got.Status == job.Active && queueOfPid(got.QueueID, pid) {
			n++
		}
	}
	return n
}

// queueOfPid reports whether a queue id (host:db:name:pid:uuid) is of process pid.
func queueOfPid(queueID string, pid int) bool {
	parts := strings.Split(queueID, ":")
	return len(parts) >= 2 && parts[len(parts)-2] == strconv.Itoa(pid)
}

// runsOf returns the starts of j's runs (its claim entries' dates) and each run's span,
// from its claim to the entry that ended it, or to deadEnd for a run of the process dead.
func runsOf(j *job.Job, dead int, deadEnd time.Time) (starts []time.Time, runs [][2]time.Time) {
	for i, e := range j.Log {
		if e.Message != job.MessageActive {
			continue
		}
		starts = append(starts, e.Date)
		end := j.DateFinished
		if i+1 < len(j.Log) {
			end = j.Log[i+1].Date
		}
		if queueOfPid(e.QueueID, dead) && end.After(deadEnd) {
			end = deadEnd
		}
		runs = append(runs, [2]time.Time{e.Date, end})
	}
	return starts, runs
}

// mostInSpan is the most of starts within any span of per, ends included.
func mostInSpan(starts []time.Time, per time.Duration) int {
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i := range starts {
		n := 0
		for _, s := range starts[i:] {
			if s.Sub(starts[i]) > per {
				break
			}
			n++
		}
		most = max(most, n)
	}
	return most
}

// mostAtOnce is the most of runs that overlap at one time.
func mostAtOnce(runs [][2]time.Time) int {
	most := 0
	for _, a := range runs {
		n := 0
		for _, b := range runs {
			if !b[0].After(a[0]) && b[1].After(a[0]) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// A group's running limit and its rate are set apart, each keeping the other; bad rates
// are refused, and nothing is written.
func TestGroupRateAndLimitAreSetApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for _, bad := range []struct {
		starts int
		per    time.Duration
	}{{-1, time.Second}, {1, 0}, {0, time.Second}, {1, time.Microsecond}} {
		assert.ErrorIs(t, f.q.SetGroupRate(ctx, "g", bad.starts, bad.per), queue.ErrInvalidLimit, "%v", bad)
	}
	assert.ErrorIs(t, f.q.SetGroupRate(ctx, "\xff", 1, time.Second), queue.ErrInvalidLimit)
	rates, err := f.q.GroupRates(ctx)
	require.NoError(t, err)
	assert.Empty(t, rates, "nothing written")

	require.NoError(t, f.q.SetGroupRate(ctx, "g", 5, time.Minute))
	require.NoError(t, f.q.SetGroupLimit(ctx, "g", 2))
	require.NoError(t, f.q.SetGroupRate(ctx, "", 100, time.Hour))
	limits, err := f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"g": 2}, limits, "a rate alone sets no running limit")
	rates, err = f.q.GroupRates(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.GroupRate{"g": {Starts: 5, Per: time.Minute}, "": {Starts: 100, Per: time.Hour}}, rates)
	_, err = f.q.AddJob(ctx, f.q.CreateJob(nil).SetGroup("h"))
	require.NoError(t, err)
	groups, _, err := f.q.Groups(ctx)
	require.NoError(t, err)
	assert.Equal(t, []queue.GroupStat{
		{Group: "", Rate: queue.GroupRate{Starts: 100, Per: time.Hour}},
		{Group: "g", Limit: 2, Rate: queue.GroupRate{Starts: 5, Per: time.Minute}},
		{Group: "h", Rate: queue.GroupRate{Starts: 100, Per: time.Hour}, Waiting: 1},
	}, groups)

	// A rate of 0 gives the group back to the default, and keeps its running limit; a
	// limit of 0 then leaves nothing of the group's own.
	require.NoError(t, f.q.SetGroupRate(ctx, "g", 0, 0))
	rates, err = f.q.GroupRates(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.GroupRate{"": {Starts: 100, Per: time.Hour}}, rates)
	limits, err = f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"g": 2}, limits)
	require.NoError(t, f.q.SetGroupLimit(ctx, "g", 0))
	limits, err = f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Empty(t, limits)
}

// A rate and a running limit together: the jobs the running limit holds back start as
// soon as a slot frees, while the rate has room, rather than when the rate's span ends. By
// name (Limit{Starts, Per, Running}) and by group (SetGroupRate beside SetGroupLimit).
func TestARunningLimitBesideARateStartsTheNextAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 3})
	ctx := testContext(t)
	require.NoError(t, f.q.SetLimit(ctx, "capped", queue.Limit{Starts: 2, Per: time.Hour, Running: 1}))
	require.NoError(t, f.q.SetGroupLimit(ctx, "g", 1))
	require.NoError(t, f.q.SetGroupRate(ctx, "g", 2, time.Hour))
	// Three of each: two start one after the other, the third waits for the rate.
	var jobs []*job.Job
	for i := range 3 {
		jobs = append(jobs, f.q.CreateJob(i).SetName("capped"), f.q.CreateJob(i).SetGroup("g"))
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) {
		<-time.After(20 * time.Millisecond)
		return nil, nil
	}))
	start := time.Now()
	_, err := f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	completed := map[string]int{}
	deadline := time.After(5 * time.Second)
	for completed["capped"] < 2 || completed["g"] < 2 {
		select {
		case e := <-events:
			for _, j := range jobs {
				if j.ID == e.JobID && j.Group() == "g" {
					completed["g"]++
				} else if j.ID == e.JobID {
					completed[j.Name]++
				}
			}
		case <-deadline:
			t.Fatalf("completed %v in 5 s: the second job of a name or group with both limits waited for the rate's span, not for the running slot", completed)
		}
	}
	t.Logf("two of each, one at a time, in %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, job.Waiting, f.get(t, jobs[4].ID).Status, "the third of the name waits for the rate")
	assert.Equal(t, job.Waiting, f.get(t, jobs[5].ID).Status, "the third of the group waits for the rate")
}
