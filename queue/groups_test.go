package queue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// gauge counts the runs of each key at once, inside the handlers, and keeps the most. The
// runs of a key in reach wait (5 s at most) until that many of the key run at once, so
// that a key's peak shows it can reach it however the machine schedules the runs.
type gauge struct {
	mu        sync.Mutex
	now, most map[string]int
	key       func(*job.Job) string
	reach     map[string]int
}

func newGauge(key func(*job.Job) string, reach map[string]int) *gauge {
	return &gauge{now: map[string]int{}, most: map[string]int{}, key: key, reach: reach}
}

func (g *gauge) handler(ctx context.Context, j *job.Job) (any, error) {
	k := g.key(j)
	g.mu.Lock()
	g.now[k]++
	g.most[k] = max(g.most[k], g.now[k])
	g.mu.Unlock()
	if n := g.reach[k]; n > 0 {
		until := time.Now().Add(5 * time.Second)
		for time.Now().Before(until) && ctx.Err() == nil {
			g.mu.Lock()
			reached := g.most[k] >= n
			g.mu.Unlock()
			if reached {
				break
			}
			<-time.After(5 * time.Millisecond) // poll for the others to start
		}
	}
	select {
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.now[k]--
	g.mu.Unlock()
	return nil, nil
}

func (g *gauge) peaks() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.most))
	for k, v := range g.most {
		out[k] = v
	}
	return out
}

// Three processing queues (worker processes) share the groups' slots: no group ever
// has more jobs running than its limit (its own, else the default), every job runs once,
// and a group without any limit runs as wide as the workers let it.
func TestGroupLimitsHoldAcrossWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 8})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "", 2))
	require.NoError(t, f.q.SetGroupLimit(ctx, "big", 4))
	groups, err := f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"": 2, "big": 4}, groups)

	g := newGauge(func(j *job.Job) string { return j.Group() }, map[string]int{"big": 3})
	var jobs []*job.Job
	for i := range 60 {
		grp := []string{"a", "b", "big"}[i%3]
		jobs = append(jobs, f.q.CreateJob(i).SetGroup(grp))
	}
	for i := range 12 {
		jobs = append(jobs, f.q.CreateJob(i)) // no group
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(g.handler))
	for range 2 {
		require.NoError(t, newQueue(t, f, &queue.Options{Concurrency: 8, MasterInterval: -1}).Process(g.handler))
	}
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, jobs...)

	peaks := g.peaks()
	t.Logf("most running at once, by group: %v", peaks)
	assert.LessOrEqual(t, peaks["a"], 2)
	assert.LessOrEqual(t, peaks["b"], 2)
	assert.LessOrEqual(t, peaks["big"], 4)
	assert.GreaterOrEqual(t, peaks["big"], 3, "its own limit, not the default")
	for _, j := range jobs {
		got := f.get(t, j.ID)
		assert.Equal(t, job.Completed, got.Status)
		assert.Equal(t, 1, got.ProcessCount, "once")
	}
}

// Limit.Running caps the jobs of a name running at once across workers.
func TestRunningCapAcrossWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 6})
	ctx := testContext(t)
	require.NoError(t, f.q.SetLimit(ctx, "render", queue.Limit{Running: 3}))
	limits, err := f.q.Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.Limit{"render": {Running: 3}}, limits)

	g := newGauge(func(j *job.Job) string { return j.Name }, map[string]int{"mail": 4})
	var jobs []*job.Job
	for i := range 40 {
		jobs = append(jobs, f.q.CreateJob(i).SetName([]string{"render", "mail"}[i%2]))
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(g.handler))
	require.NoError(t, newQueue(t, f, &queue.Options{Concurrency: 6, MasterInterval: -1}).Process(g.handler))
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, jobs...)
	peaks := g.peaks()
	t.Logf("most running at once, by name: %v", peaks)
	assert.LessOrEqual(t, peaks["render"], 3)
	assert.GreaterOrEqual(t, peaks["mail"], 4, "other names are not capped")
}

// Bad group keys and limits are refused at the call, and nothing is written.
func TestGroupBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	long := fmt.Sprintf("%0*d", job.MaxGroupLen+1, 0)
	for _, key := range []string{"", long, "\xff"} {
		assert.ErrorIs(t, f.q.CreateJob(nil).SetGroup(key).Err(), job.ErrInvalidGroup, "%q", key)
		_, err := f.q.AddJob(ctx, f.q.CreateJob(nil).SetGroup(key))
		assert.ErrorIs(t, err, job.ErrInvalid)
	}
	assert.ErrorIs(t, f.q.SetGroupLimit(ctx, "a", -1), queue.ErrInvalidLimit)
	assert.ErrorIs(t, f.q.SetGroupLimit(ctx, long, 1), queue.ErrInvalidLimit)
	assert.ErrorIs(t, f.q.SetLimit(ctx, "mail", queue.Limit{Running: -1}), queue.ErrInvalidLimit)
	assert.ErrorIs(t, f.q.SetLimit(ctx, "rjq:group:x", queue.Limit{Running: 1}), queue.ErrInvalidLimit)
	huge := strings.Repeat("g", 1000)
	for _, err := range []error{f.q.SetGroupLimit(ctx, huge, 1), f.q.CreateJob(nil).SetGroup(huge).Err(),
		f.q.CreateJob(nil).SetSequence(huge).Err(), f.q.SetLimit(ctx, huge, queue.Limit{Running: -1})} {
		require.Error(t, err)
		assert.Equal(t, 1, strings.Count(err.Error(), `"g`), "the key once, shortened: %s", err)
		assert.Contains(t, err.Error(), "(1000 bytes)")
	}
	groups, err := f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Empty(t, groups)
	n, err := f.q.Summary(ctx)
	require.NoError(t, err)
	assert.Zero(t, n.Total, "no job was added")
}

// A worker that dies mid-run (here: cut off from the server for good) holds its group's
// slot until its run's lease ends, never less (no over-admission) and no longer (the
// group is not stuck): a job of the group waiting elsewhere starts just after.
func TestADeadWorkersSlotComesBackWhenItsLeaseEnds(t *testing.T) {
	if raceDetector {
		t.Skip("redials from several goroutines at once meet the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	t.Parallel()
	const heartbeat = time.Second
	f := newFixture(t, &queue.Options{Heartbeat: heartbeat, Concurrency: 4, MasterInterval: time.Hour})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "g", 1))
	dead, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true,
		Heartbeat: heartbeat, Concurrency: 1}))
	started := make(chan string, 1)
	end := make(chan struct{})
	t.Cleanup(func() { // before the dead queue's Stop, which waits for its run
		proxy.Partition(0) // the network is back: new connections work
		close(end)
	})
	require.NoError(t, dead.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- j.ID
		<-end
		return nil, nil
	}))
	first, err := dead.AddJob(ctx, dead.CreateJob("first").SetGroup("g"))
	require.NoError(t, err)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the first job did not start")
	}
	proxy.Partition(time.Hour)
	leaseEnd := f.get(t, first[0].ID).DateEnable

	var mu sync.Mutex
	var secondAt time.Time
	done := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(func(_ context.Context, j *job.Job) (any, error) {
		mu.Lock()
		if j.Name == "second" {
			secondAt = time.Now()
		}
		mu.Unlock()
		return nil, nil
	}))
	second, err := f.q.AddJob(ctx, f.q.CreateJob("second").SetName("second").SetGroup("g"))
	require.NoError(t, err)
	waitFor(t, done, queue.EventCompleted, second[0].ID)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the second job started %v after the dead run's lease ended", secondAt.Sub(leaseEnd).Round(time.Millisecond))
	assert.False(t, secondAt.Before(leaseEnd), "not while the dead run's lease lasts")
	assert.Less(t, secondAt.Sub(leaseEnd), 3*time.Second, "soon after it ends")
}

// Groups shows each group's limit and how many of its jobs wait and run: here one job of
// "acme" runs (its handler holds it) while two wait behind its limit of 1.
func TestGroupsCountWaitingAndActiveJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "", 3))
	require.NoError(t, f.q.SetGroupLimit(ctx, "acme", 1))
	require.NoError(t, f.q.SetGroupLimit(ctx, "idle", 5))
	var jobs []*job.Job
	for range 3 {
		jobs = append(jobs, f.q.CreateJob(nil).SetGroup("acme"))
	}
	jobs = append(jobs, f.q.CreateJob(nil).SetGroup("zeta"), f.q.CreateJob(nil))
	_, err := f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)

	release := make(chan struct{})
	started := make(chan string, len(jobs))
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		started <- j.Group()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	defer close(release)
	seen := map[string]int{}
	for len(seen) < 3 || seen["acme"] < 1 {
		select {
		case g := <-started:
			seen[g]++
		case <-ctx.Done():
			t.Fatalf("started so far: %v", seen)
		}
	}
	require.Eventually(t, func() bool {
		groups, partial, err := f.q.Groups(ctx)
		return err == nil && !partial && assert.ObjectsAreEqual([]queue.GroupStat{
			{Group: "", Limit: 3},
			{Group: "acme", Limit: 1, Waiting: 2, Active: 1},
			{Group: "idle", Limit: 5},
			{Group: "zeta", Limit: 3, Active: 1},
		}, groups)
	}, 10*time.Second, 50*time.Millisecond)
}

// A group limit of 0 takes the group's own limit away: the group goes by the default
// again (here 1), as a group never given one; the default of 0 is no default. Groups
// shows the default as the row "".
func TestAGroupLimitOfZeroFallsBackToTheDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	require.NoError(t, f.q.SetGroupLimit(ctx, "", 1))
	require.NoError(t, f.q.SetGroupLimit(ctx, "acme", 3))
	require.NoError(t, f.q.SetGroupLimit(ctx, "acme", 0))
	limits, err := f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"": 1}, limits, "acme has no limit of its own")

	var jobs []*job.Job
	for range 3 {
		jobs = append(jobs, f.q.CreateJob(nil).SetGroup("acme"))
	}
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	defer close(release)
	want := []queue.GroupStat{{Group: "", Limit: 1}, {Group: "acme", Limit: 1, Waiting: 2, Active: 1}}
	require.Eventually(t, func() bool {
		groups, _, err := f.q.Groups(ctx)
		return err == nil && assert.ObjectsAreEqual(want, groups)
	}, 10*time.Second, 50*time.Millisecond, "one of acme's jobs runs, by the default")

	require.NoError(t, f.q.SetGroupLimit(ctx, "", 0))
	limits, err = f.q.GroupLimits(ctx)
	require.NoError(t, err)
	assert.Empty(t, limits, "no default")
}

// Groups take turns: a group that adds behind another's backlog starts beside its head,
// not behind its last job; the jobs of a group keep their add order; a job without a
// group, or delayed, keeps its dateEnable.
func TestAGroupAddedBehindABacklogTakesTurnsWithIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 1})
	ctx := testContext(t)
	var backlog []*job.Job
	for i := range 200 {
		backlog = append(backlog, f.q.CreateJob(i).SetGroup("a"))
	}
	_, err := f.q.AddJob(ctx, backlog...)
	require.NoError(t, err)
	for i := 1; i < len(backlog); i++ {
		require.False(t, backlog[i].DateEnable.Before(backlog[i-1].DateEnable), "a group's jobs keep their add order")
	}
	spread := backlog[len(backlog)-1].DateEnable.Sub(backlog[0].DateEnable)
	assert.Equal(t, time.Duration(len(backlog)/rdb.TurnsPerMilli-1)*time.Millisecond, spread, "TurnsPerMilli jobs of a group a millisecond")

	var late []*job.Job
	for i := range 10 {
		late = append(late, f.q.CreateJob(i).SetGroup("b"))
	}
	plain := f.q.CreateJob("plain")
	plainAt := plain.DateEnable
	delayedAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	delayed := f.q.CreateJob("delayed").SetGroup("b").SetDateEnable(delayedAt)
	_, err = f.q.AddJob(ctx, append(late, plain, delayed)...)
	require.NoError(t, err)
	assert.True(t, plain.DateEnable.Equal(plainAt), "a job without a group keeps its time")
	assert.True(t, delayed.DateEnable.Equal(delayedAt), "a delayed job keeps its time")
	assert.False(t, late[0].DateEnable.After(backlog[0].DateEnable), "b starts at a's head")

	var mu sync.Mutex
	var order []string
	events := f.q.Events(ctx, queue.EventCompleted)
	require.NoError(t, f.q.Process(func(_ context.Context, j *job.Job) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, j.Group())
		return nil, nil
	}))
	all := append(append(append([]*job.Job(nil), backlog...), late...), plain)
	waitForAll(t, events, queue.EventCompleted, all...)
	mu.Lock()
	defer mu.Unlock()
	lastB := -1
	for i, g := range order {
		if g == "b" {
			lastB = i
		}
	}
	t.Logf("b's last of its 10 jobs started %dth of %d", lastB+1, len(order))
	assert.Less(t, lastB, 2*(len(late)+rdb.TurnsPerMilli), "b waited for a's backlog: %v", order)

	// Every job ran: a Queue Master's review removes the turns behind the claims, once
	// the clock has passed the last.
	turns := func() int {
		n, err := r.DB(f.db).Table(queue.DefaultName + rdb.SlotsSuffix).Filter(func(d r.Term) r.Term {
			return d.Field("id").Match("^turn:")
		}).Count().Run(f.raw)
		require.NoError(t, err)
		var count int
		require.NoError(t, n.One(&count))
		return count
	}
	require.Equal(t, 2, turns(), "a's and b's")
	for until := time.Now().Add(5 * time.Second); turns() > 0 && time.Now().Before(until); {
		<-time.After(50 * time.Millisecond) // the last turn is a few milliseconds ahead
		_, err := f.q.Review(ctx)
		require.NoError(t, err)
	}
	assert.Zero(t, turns(), "the review removed them")
}
