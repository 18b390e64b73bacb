package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// flowLog records, inside the handlers, when each job started and completed, by its
// data (a name), and what its parents' results were.
type flowLog struct {
	mu        sync.Mutex
	started   map[string]time.Time
	completed map[string]time.Time
	runs      map[string]int
	early     []string
	parents   map[string][]string // name → parent names
	results   map[string]map[string]string
	fail      map[string]int // name → runs that fail before one completes (-1: all)
}

func newFlowLog() *flowLog {
	return &flowLog{started: map[string]time.Time{}, completed: map[string]time.Time{}, runs: map[string]int{},
		parents: map[string][]string{}, results: map[string]map[string]string{}, fail: map[string]int{}}
}

func (l *flowLog) handler(ctx context.Context, j *job.Job) (any, error) {
	var name string
	if err := j.DataAs(&name); err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, p := range j.DependsOn() {
		var v string
		if err := j.ParentResult(p, &v); err != nil {
			return nil, fmt.Errorf("parent result %s: %w", p, err)
		}
		got[p] = v
	}
	l.mu.Lock()
	l.runs[name]++
	l.started[name] = time.Now()
	for _, p := range l.parents[name] {
		if _, ok := l.completed[p]; !ok {
			l.early = append(l.early, fmt.Sprintf("%s started before its parent %s completed", name, p))
		}
	}
	l.results[name] = got
	fail := l.fail[name] < 0 || l.runs[name] <= l.fail[name]
	l.mu.Unlock()
	if fail {
		return nil, errors.New("fails")
	}
	l.mu.Lock()
	l.completed[name] = time.Now()
	l.mu.Unlock()
	return "result of " + name, nil
}

// A diamond (A → B, A → C, B + C → D), added children first in one call, runs over two
// queues in dependency order, each job once, and each child reads its parents' results.
func TestADiamondRunsInDependencyOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	l := newFlowLog()
	a := f.q.CreateJob("A")
	b := f.q.CreateJob("B").SetDependsOn(a.ID)
	c := f.q.CreateJob("C").SetDependsOn(a.ID)
	d := f.q.CreateJob("D").SetDependsOn(b.ID, c.ID)
	l.parents = map[string][]string{"B": {"A"}, "C": {"A"}, "D": {"B", "C"}}
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventReleased)
	added, err := f.q.AddJob(ctx, d, c, b, a)
	require.NoError(t, err)
	assert.Equal(t, job.Blocked, added[0].Status)
	assert.Equal(t, job.Waiting, added[3].Status)
	s, err := f.q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Blocked, "counted apart from waiting")
	assert.Equal(t, 1, s.Waiting)

	require.NoError(t, f.q.Process(l.handler))
	require.NoError(t, newQueue(t, f, &queue.Options{Concurrency: 4, MasterInterval: -1}).Process(l.handler))
	waitForAll(t, events, queue.EventCompleted, a, b, c, d)

	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early)
	assert.Equal(t, map[string]int{"A": 1, "B": 1, "C": 1, "D": 1}, l.runs)
	assert.Equal(t, map[string]string{b.ID: "result of B", c.ID: "result of C"}, l.results["D"])
	got := f.get(t, d.ID)
	assert.Contains(t, messages(got.Log), job.MessageReleased)
	var v string
	assert.ErrorIs(t, got.ParentResult(a.ID, &v), job.ErrNotParent)
}

// A child whose parents completed before it was added is added waiting and runs; one
// whose parent waits in the table is blocked until it completes.
func TestParentsAlreadyInTheTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 2})
	ctx := testContext(t)
	l := newFlowLog()
	done := f.q.CreateJob("done")
	later := f.q.CreateJob("later").SetDateEnable(time.Now().Add(300 * time.Millisecond))
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventReleased)
	require.NoError(t, f.q.Process(l.handler))
	_, err := f.q.AddJob(ctx, done, later)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, done)

	l.parents = map[string][]string{"after done": {"done"}, "after later": {"later"}}
	afterDone := f.q.CreateJob("after done").SetDependsOn(done.ID)
	afterLater := f.q.CreateJob("after later").SetDependsOn(later.ID)
	added, err := f.q.AddJob(ctx, afterDone, afterLater)
	require.NoError(t, err)
	assert.Equal(t, job.Waiting, added[0].Status, "its parent completed already")
	waitForAll(t, events, queue.EventCompleted, afterDone, later)
	waitForAll(t, events, queue.EventCompleted, afterLater)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early)
	assert.Equal(t, map[string]string{done.ID: "result of done"}, l.results["after done"])
}

// A terminated parent cancels its blocked subtree, three levels down: its children with
// a reason naming it, their descendants with one naming it as their ancestor, with its
// name; the reason is each job's last log entry. A parent that fails once and then
// completes releases its children once.
func TestFailureFlowsDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	l := newFlowLog()
	l.fail = map[string]int{"root": -1, "flaky": 1}
	root := f.q.CreateJob("root").SetRetryMax(0).SetName("import")
	b := f.q.CreateJob("b").SetDependsOn(root.ID)
	c := f.q.CreateJob("c").SetDependsOn(b.ID)
	d := f.q.CreateJob("d").SetDependsOn(c.ID)
	flaky := f.q.CreateJob("flaky").SetRetryMax(1).SetRetryDelay(20 * time.Millisecond)
	kid := f.q.CreateJob("kid").SetDependsOn(flaky.ID)
	l.parents = map[string][]string{"kid": {"flaky"}}
	events := f.q.Events(ctx, queue.EventCancelled, queue.EventCompleted, queue.EventTerminated, queue.EventReleased)
	_, err := f.q.AddJob(ctx, root, b, c, d, flaky, kid)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(l.handler))

	reasons := map[string]string{}
	released := map[string]int{}
	deadline := time.After(15 * time.Second)
	kidDone := false
	for len(reasons) < 3 || !kidDone {
		select {
		case e := <-events:
			switch e.Type {
			case queue.EventCancelled:
				reasons[e.JobID] = e.Reason
			case queue.EventReleased:
				released[e.JobID]++
			case queue.EventCompleted:
				kidDone = kidDone || e.JobID == kid.ID
			}
		case <-deadline:
			t.Fatalf("cancelled so far: %v", reasons)
		}
	}
	assert.Equal(t, map[string]string{
		b.ID: fmt.Sprintf("parent %s was terminated", root.ID),
		c.ID: fmt.Sprintf(`ancestor %s ("import") was terminated`, root.ID),
		d.ID: fmt.Sprintf(`ancestor %s ("import") was terminated`, root.ID),
	}, reasons)
	for _, j := range []*job.Job{b, c, d} {
		got := f.get(t, j.ID)
		assert.Equal(t, job.Cancelled, got.Status)
		assert.Equal(t, 0, got.ProcessCount, "never ran")
		assert.Equal(t, reasons[j.ID], got.Log[len(got.Log)-1].Message)
	}
	assert.Equal(t, 1, released[kid.ID], "released once, after the retry completed")
	assert.Equal(t, 1, l.count("kid"))
	assert.Equal(t, 2, l.count("flaky"))
}

func (l *flowLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[name]
}

// CancelJob on a parent cancels its blocked descendants before it returns, each with a
// reason naming it (its children as their parent, the others as their ancestor);
// RemoveJob too.
func TestCancelOrRemoveAParentCancelsItsDescendants(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for _, remove := range []bool{false, true} {
		parent := f.q.CreateJob("p").SetDateEnable(time.Now().Add(time.Hour)).SetName("nightly")
		child := f.q.CreateJob("c").SetDependsOn(parent.ID)
		grandchild := f.q.CreateJob("g").SetDependsOn(child.ID, parent.ID)
		great := f.q.CreateJob("gg").SetDependsOn(grandchild.ID)
		_, err := f.q.AddJob(ctx, parent, child, grandchild, great)
		require.NoError(t, err)
		ended := "was cancelled"
		if remove {
			_, err = f.q.RemoveJob(ctx, parent.ID)
			ended = "was removed before it completed"
		} else {
			_, err = f.q.CancelJob(ctx, "not needed", parent.ID)
		}
		require.NoError(t, err)
		want := map[*job.Job]string{
			child:      fmt.Sprintf("parent %s %s", parent.ID, ended),
			grandchild: fmt.Sprintf("parent %s %s", parent.ID, ended),
			great:      fmt.Sprintf(`ancestor %s ("nightly") %s`, parent.ID, ended),
		}
		for j, reason := range want {
			got := f.get(t, j.ID)
			assert.Equal(t, job.Cancelled, got.Status, "remove %v", remove)
			assert.Equal(t, reason, got.Log[len(got.Log)-1].Message)
		}
	}
}

// A worker that died between a parent's completion and its children's release strands
// nothing: a review releases the child, once.
func TestAReviewReleasesAChildWhoseParentCompleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	parent := f.q.CreateJob("p").SetDateEnable(time.Now().Add(time.Hour))
	child := f.q.CreateJob("c").SetDependsOn(parent.ID)
	_, err := f.q.AddJob(ctx, parent, child)
	require.NoError(t, err)
	// The parent's outcome as a worker writes it, and nothing after.
	entry := job.LogEntry{Date: time.Now(), QueueID: "dead-worker", Message: job.MessageCompleted, Data: "its result",
		Type: job.Information, Status: job.Completed, ProcessCount: 1}
	_, err = f.table().Get(parent.ID).Update(map[string]any{"status": "completed", "dateFinished": time.Now(),
		"processCount": 1, "queueId": "dead-worker", "log": []any{entry.Document()}}).RunWrite(f.raw)
	require.NoError(t, err)
	assert.Equal(t, job.Blocked, f.get(t, child.ID).Status)

	_, err = f.q.Review(ctx)
	require.NoError(t, err)
	got := f.get(t, child.ID)
	require.Equal(t, job.Waiting, got.Status)
	var v string
	require.NoError(t, got.ParentResult(parent.ID, &v))
	assert.Equal(t, "its result", v)
	_, err = f.q.Review(ctx)
	require.NoError(t, err)
	assert.Len(t, f.get(t, child.ID).Log, len(got.Log), "released once")
}

// Bad input gets a clear error naming what is wrong, and nothing is written.
func TestWorkflowBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	failed := f.q.CreateJob("x")
	_, err := f.q.AddJob(ctx, failed)
	require.NoError(t, err)
	_, err = f.q.CancelJob(ctx, "", failed.ID)
	require.NoError(t, err)

	a, b := f.q.CreateJob(1), f.q.CreateJob(2)
	a.SetDependsOn(b.ID)
	b.SetDependsOn(a.ID)
	self := f.q.CreateJob(3)
	self.SetDependsOn(self.ID)
	missing := uuid.NewString()
	many := make([]string, job.MaxDependsOn+1)
	for i := range many {
		many[i] = uuid.NewString()
	}
	cases := []struct {
		name string
		jobs []*job.Job
		says string
	}{
		{"a cycle", []*job.Job{a, b}, "cycle"},
		{"itself", []*job.Job{self}, "itself"},
		{"a missing parent", []*job.Job{f.q.CreateJob(4).SetDependsOn(missing)}, "not in this call nor in queue"},
		{"not a job id", []*job.Job{f.q.CreateJob(4).SetDependsOn("not-a-uuid")}, `"not-a-uuid" is not a job id`},
		{"a parent that will never complete", []*job.Job{f.q.CreateJob(5).SetDependsOn(failed.ID)}, failed.ID + " (cancelled)"},
		{"an empty id", []*job.Job{f.q.CreateJob(6).SetDependsOn("")}, "empty"},
		{"no id", []*job.Job{f.q.CreateJob(7).SetDependsOn()}, "at least one"},
		{"too many", []*job.Job{f.q.CreateJob(8).SetDependsOn(many...)}, fmt.Sprint(job.MaxDependsOn)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.q.AddJob(ctx, c.jobs...)
			require.ErrorIs(t, err, job.ErrInvalidDependsOn)
			require.ErrorIs(t, err, job.ErrInvalid)
			assert.Contains(t, err.Error(), c.says)
			if c.name == "not a job id" {
				assert.ErrorIs(t, err, job.ErrInvalidID)
				assert.ErrorIs(t, c.jobs[0].Err(), job.ErrInvalidID, "refused by SetDependsOn")
			}
			for _, j := range c.jobs {
				assert.Nil(t, f.rawDoc(t, j.ID))
			}
		})
	}
	added, err := f.q.AddJob(ctx, f.q.CreateJob(9))
	require.NoError(t, err)
	err = added[0].SetDependsOn(failed.ID).Err()
	require.ErrorIs(t, err, job.ErrInvalidDependsOn)
	assert.True(t, strings.Contains(err.Error(), "added already"), err.Error())
}

// A handler that adds a child of its own job (the next step of a chain it decides on)
// has it released the moment it completes, with no Queue Master.
func TestAChildAddedByItsParentsHandlerRunsWhenItCompletes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, Concurrency: 2})
	ctx := testContext(t)
	next := make(chan *job.Job, 1)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		var step string
		if err := j.DataAs(&step); err != nil {
			return nil, err
		}
		if step == "first" {
			added, err := f.q.AddJob(ctx, f.q.CreateJob("second").SetDependsOn(j.ID))
			if err != nil {
				return nil, err
			}
			next <- added[0]
			return "from first", nil
		}
		var got string
		if err := j.ParentResult(j.DependsOn()[0], &got); err != nil {
			return nil, err
		}
		return got + ", then second", nil
	}))
	events := f.q.Events(ctx, queue.EventCompleted)
	first := f.q.CreateJob("first")
	_, err := f.q.AddJob(ctx, first)
	require.NoError(t, err)
	var second *job.Job
	select {
	case second = <-next:
	case <-ctx.Done():
		t.Fatal("the first job did not run")
	}
	waitForAll(t, events, queue.EventCompleted, first, second)
	var v string
	require.NoError(t, f.get(t, second.ID).Result(&v))
	assert.Equal(t, "from first, then second", v)
}

// A chain on an idle queue: the queue that completes a parent releases its child and
// claims it in the same write (both log entries carry one date, the release's), so the
// child starts one write after its parent's outcome; each runs once, in order, with its
// parent's result. A child of a group, which needs a slot of its own, is released and
// then claimed as any job (rdb's test tells the two apart).
func TestAChainOnAnIdleQueueStartsEachChildInItsRelease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 1})
	ctx := testContext(t)
	l := newFlowLog()
	var jobs []*job.Job
	for i := range 5 {
		j := f.q.CreateJob(fmt.Sprintf("step %d", i))
		if i > 0 {
			j.SetDependsOn(jobs[i-1].ID)
			l.parents[fmt.Sprintf("step %d", i)] = []string{fmt.Sprintf("step %d", i-1)}
		}
		jobs = append(jobs, j)
	}
	grouped := f.q.CreateJob("grouped").SetDependsOn(jobs[4].ID).SetGroup("g")
	l.parents["grouped"] = []string{"step 4"}
	events := f.q.Events(ctx, queue.EventCompleted)
	_, err := f.q.AddJob(ctx, append(jobs, grouped)...)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(l.handler))
	waitForAll(t, events, queue.EventCompleted, append(jobs, grouped)...)

	l.mu.Lock()
	assert.Empty(t, l.early)
	assert.Equal(t, 1, l.runs["step 4"])
	assert.Equal(t, map[string]string{jobs[3].ID: "result of step 3"}, l.results["step 4"])
	l.mu.Unlock()
	released := func(j *job.Job) (rel, active job.LogEntry) {
		t.Helper()
		got := f.get(t, j.ID)
		for i, e := range got.Log {
			if e.Message == job.MessageReleased {
				require.Greater(t, len(got.Log), i+1)
				return e, got.Log[i+1]
			}
		}
		t.Fatalf("job %s has no released entry: %v", j.ID, messages(got.Log))
		return
	}
	for _, j := range jobs[1:] {
		rel, active := released(j)
		assert.Equal(t, job.MessageActive, active.Message)
		assert.True(t, rel.Date.Equal(active.Date), "released and claimed in one write")
		assert.Equal(t, f.q.ID(), active.QueueID)
	}
	_, active := released(grouped)
	assert.Equal(t, job.MessageActive, active.Message)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, 1, l.runs["grouped"], "a child of a group: released, then claimed with its slot")
}

// A join of 40 parents processed by two queues: each queue keeps what it learnt of the
// child (its parents, the parent that held it back) between completions, and the child
// still runs once, after the last parent, with every parent's result.
func TestAJoinOverTwoQueuesRunsOnceWithEveryResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 3})
	ctx := testContext(t)
	l := newFlowLog()
	var parents []*job.Job
	var ids, names []string
	for i := range 40 {
		p := f.q.CreateJob(fmt.Sprintf("part %d", i))
		parents = append(parents, p)
		ids = append(ids, p.ID)
		names = append(names, fmt.Sprintf("part %d", i))
	}
	join := f.q.CreateJob("join").SetDependsOn(ids...)
	l.parents["join"] = names
	events := f.q.Events(ctx, queue.EventCompleted)
	_, err := f.q.AddJob(ctx, append(parents, join)...)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(l.handler))
	require.NoError(t, newQueue(t, f, &queue.Options{Concurrency: 3, MasterInterval: -1}).Process(l.handler))
	waitForAll(t, events, queue.EventCompleted, append(parents, join)...)

	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.early)
	assert.Equal(t, 1, l.runs["join"])
	require.Len(t, l.results["join"], 40)
	for i, id := range ids {
		assert.Equal(t, fmt.Sprintf("result of part %d", i), l.results["join"][id])
	}
}

// A job added blocked says so in its first log entry, and why: the entry is the
// original's added entry (type information, no data) with the status it was added with.
func TestABlockedJobsAddedEntrySaysItWaitsForItsParents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	parent := f.q.CreateJob("parent").SetDateEnable(time.Now().Add(time.Hour))
	child := f.q.CreateJob("child").SetDependsOn(parent.ID)
	_, err := f.q.AddJob(ctx, parent, child)
	require.NoError(t, err)
	got, err := f.q.GetJob(ctx, parent.ID, child.ID)
	require.NoError(t, err)
	byID := map[string]*job.Job{got[0].ID: got[0], got[1].ID: got[1]}
	for _, tc := range []struct {
		j       *job.Job
		status  job.Status
		message string
	}{
		{byID[parent.ID], job.Waiting, job.MessageAdded},
		{byID[child.ID], job.Blocked, job.MessageAddedBlocked},
	} {
		require.Len(t, tc.j.Log, 1)
		e := tc.j.Log[0]
		assert.Equal(t, tc.status, tc.j.Status)
		assert.Equal(t, tc.status, e.Status, "the added entry has the status the job was added with")
		assert.Equal(t, tc.message, e.Message)
		assert.Equal(t, job.Information, e.Type)
		assert.Nil(t, e.Data)
	}
	assert.Contains(t, byID[child.ID].Log[0].Message, "waits for its parents")
}
