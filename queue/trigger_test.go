package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// reqliteTies says why the tests of a catch-up skip on reqlite.
const reqliteTies = "reqlite orders the documents of one index value as they were inserted, not by id as RethinkDB does, so a catch-up batch that ends inside a tie passes over some"

// orders is a user table watched by the trigger tests: documents {id, status,
// updatedAt: r.now()}, with the index updatedAt.
type orders struct {
	t  *testing.T
	f  fixture
	tb r.Term
}

func newOrders(t *testing.T, f fixture) orders {
	t.Helper()
	o := orders{t: t, f: f, tb: r.DB(f.db).Table("orders")}
	_, err := r.DB(f.db).TableCreate("orders").RunWrite(f.raw)
	require.NoError(t, err)
	_, err = o.tb.IndexCreate("updatedAt").RunWrite(f.raw)
	require.NoError(t, err)
	require.NoError(t, o.tb.IndexWait().Exec(f.raw))
	return o
}

// write inserts or replaces the order id with status, stamped by the server.
func (o orders) write(id, status string) {
	o.t.Helper()
	_, err := o.tb.Insert(map[string]any{"id": id, "status": status, "updatedAt": r.Now()},
		r.InsertOpts{Conflict: "replace"}).RunWrite(o.f.raw)
	require.NoError(o.t, err)
}

// orderJob is the trigger's Job func: a job named "order" with the order's id and status.
func orderJob(q *queue.Queue) func(context.Context, map[string]any) (*job.Job, error) {
	return func(_ context.Context, doc map[string]any) (*job.Job, error) {
		return q.CreateJob(map[string]any{"order": doc["id"], "status": doc["status"]}).SetName("order"), nil
	}
}

// triggerJobs reads the jobs the trigger made, as "order:status" by job id.
func triggerJobs(t *testing.T, f fixture) map[string]string {
	t.Helper()
	jobs, err := f.q.FindJobByName(testContext(t), "order")
	require.NoError(t, err)
	out := make(map[string]string, len(jobs))
	for _, j := range jobs {
		var d struct{ Order, Status string }
		require.NoError(t, j.DataAs(&d))
		out[j.ID] = d.Order + ":" + d.Status
	}
	return out
}

// waitJobs waits until the trigger's jobs are want (as "order:status", in any order).
func waitJobs(t *testing.T, f fixture, want ...string) {
	t.Helper()
	var got map[string]string
	ok := assert.Eventually(t, func() bool {
		got = triggerJobs(t, f)
		return assert.ObjectsAreEqual(sortedValues(got), sortedStrings(want))
	}, 20*time.Second, 20*time.Millisecond)
	if !ok {
		t.Fatalf("jobs %v, want %v", sortedValues(got), sortedStrings(want))
	}
}

// A trigger follows its table: each version written gets one job, in a process that is a
// Queue Master; Triggers reports its table, cursor, runner and count.
func TestATriggerMakesAJobPerVersion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: time.Hour})
	ctx := testContext(t)
	o := newOrders(t, f)
	require.NoError(t, f.q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(f.q),
		Deleted: func(ctx context.Context, last map[string]any) (*job.Job, error) {
			last["status"] = "deleted after " + fmt.Sprint(last["status"])
			return orderJob(f.q)(ctx, last)
		}}))
	waitRunner(t, f.q, "orders")
	o.write("o1", "placed")
	waitJobs(t, f, "o1:placed")
	o.write("o1", "paid")
	o.write("o2", "placed")
	waitJobs(t, f, "o1:placed", "o1:paid", "o2:placed")
	_, err := o.tb.Get("o2").Delete().RunWrite(f.raw)
	require.NoError(t, err)
	waitJobs(t, f, "o1:placed", "o1:paid", "o2:placed", "o2:deleted after placed")

	stats, err := f.q.Triggers(ctx)
	require.NoError(t, err)
	require.Len(t, stats, 1)
	s := stats[0]
	assert.Equal(t, "orders", s.Table)
	assert.Equal(t, f.db, s.DB)
	assert.Equal(t, "updatedAt", s.Field)
	assert.Equal(t, f.q.ID(), s.Runner)
	assert.True(t, s.Declared)
	assert.Less(t, s.Lag, 5*time.Second)
	assert.Eventually(t, func() bool {
		stats, err := f.q.Triggers(ctx)
		return err == nil && stats[0].Jobs == 4 && stats[0].Cursor != nil
	}, 10*time.Second, 50*time.Millisecond, "the count and the cursor are recorded")
}

// waitRunner waits until a process runs the trigger name.
func waitRunner(t *testing.T, q *queue.Queue, name string) string {
	t.Helper()
	var runner string
	require.Eventually(t, func() bool {
		stats, err := q.Triggers(testContext(t))
		if err != nil {
			return false
		}
		for _, s := range stats {
			if s.Name == name {
				runner = s.Runner
			}
		}
		return runner != ""
	}, 20*time.Second, 20*time.Millisecond, "a process runs trigger %s", name)
	return runner
}

// Versions written while no process ran the trigger get their jobs when one starts: the
// latest of each document, and one per version still there (an order overwritten twice
// while nobody followed gets a job for its last state only).
func TestATriggerCatchesUpFromItsCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1}) // declares, never runs
	if f.srv.IsReqlite() {
		t.Skip(reqliteTies)
	}
	ctx := testContext(t)
	o := newOrders(t, f)
	require.NoError(t, f.q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(f.q)}))
	for i := range 450 { // more than two batches
		o.write(fmt.Sprint("o", i), "placed")
	}
	o.write("o7", "paid")
	o.write("o7", "shipped")
	stats, err := f.q.Triggers(ctx)
	require.NoError(t, err)
	assert.Empty(t, stats[0].Runner, "no Queue Master declared it")
	assert.Positive(t, stats[0].Lag, "versions wait")

	master := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	require.NoError(t, master.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(master)}))
	var want []string
	for i := range 450 {
		if i != 7 {
			want = append(want, fmt.Sprint("o", i, ":placed"))
		}
	}
	waitJobs(t, f, append(want, "o7:shipped")...)
	assert.Eventually(t, func() bool {
		stats, err := f.q.Triggers(ctx)
		return err == nil && stats[0].Lag == 0 && stats[0].Jobs == 450
	}, 10*time.Second, 50*time.Millisecond, "caught up")
}

// Two processes declare one trigger: one runs it; when it stops, the other takes over
// and no version written meanwhile is missed or made twice.
func TestATriggerFailsOverToAnotherProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	o := newOrders(t, f)
	a := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	b := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	decl := func(q *queue.Queue) queue.Trigger {
		return queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(q)}
	}
	require.NoError(t, a.AddTrigger(ctx, decl(a)))
	require.Equal(t, a.ID(), waitRunner(t, f.q, "orders"))
	require.NoError(t, b.AddTrigger(ctx, decl(b)))
	o.write("o1", "placed")
	waitJobs(t, f, "o1:placed")

	require.NoError(t, a.Stop(ctx)) // gives its lease up
	o.write("o2", "placed")
	o.write("o1", "paid")
	require.Equal(t, b.ID(), waitRunner(t, f.q, "orders"))
	waitJobs(t, f, "o1:placed", "o1:paid", "o2:placed")
}

// What a trigger cannot use is refused at AddTrigger (a missing table or index, a
// trigger without a Job func) or skipped with the document's id (a version without a time
// or a number, a Job func that fails or panics, a job AddJob refuses), and the versions
// after it still get their jobs.
func TestATriggerSkipsWhatItCannotUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: time.Hour})
	ctx := testContext(t)
	o := newOrders(t, f)
	job1 := orderJob(f.q)
	for _, bad := range []queue.Trigger{
		{Name: "t", Table: "nope", Index: "updatedAt", Job: job1},
		{Name: "t", Table: "orders", Index: "nope", Job: job1},
	} {
		assert.ErrorIs(t, f.q.AddTrigger(ctx, bad), queue.ErrNoTriggerSource, "%+v", bad)
	}
	for _, bad := range []queue.Trigger{
		{Table: "orders", Index: "updatedAt", Job: job1},
		{Name: "t", Index: "updatedAt", Job: job1},
		{Name: "t", Table: "orders", Job: job1},
		{Name: "t", Table: "orders", Index: "updatedAt"},
		{Name: "t", Table: "orders", Index: "updatedAt", Job: job1, Rescan: -1},
	} {
		assert.ErrorIs(t, f.q.AddTrigger(ctx, bad), queue.ErrInvalidTrigger, "%+v", bad)
	}
	stats, err := f.q.Triggers(ctx)
	require.NoError(t, err)
	assert.Empty(t, stats, "nothing stored")

	var mu sync.Mutex
	require.NoError(t, f.q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt",
		Job: func(ctx context.Context, doc map[string]any) (*job.Job, error) {
			mu.Lock()
			defer mu.Unlock()
			switch doc["status"] {
			case "panic":
				panic("a bug in the func")
			case "fail":
				return nil, errors.New("the func failed")
			case "invalid":
				return f.q.CreateJob(nil).SetPriority(job.Priority(7)), nil
			case "ignored":
				return nil, nil
			}
			return orderJob(f.q)(ctx, doc)
		}}))
	waitRunner(t, f.q, "orders")
	_, err = o.tb.Insert(map[string]any{"id": "text", "status": "placed", "updatedAt": "yesterday"}).RunWrite(f.raw)
	require.NoError(t, err)
	for _, s := range []string{"panic", "fail", "invalid", "ignored"} {
		o.write("bad-"+s, s)
	}
	o.write("good", "placed")
	waitJobs(t, f, "good:placed")
	require.Eventually(t, func() bool {
		stats, err := f.q.Triggers(ctx)
		return err == nil && stats[0].Skipped == 4
	}, 10*time.Second, 50*time.Millisecond, "a string time, a panic, a failure and an invalid job are skipped")
	stats, err = f.q.Triggers(ctx)
	require.NoError(t, err)
	assert.Contains(t, stats[0].LastSkip, "document")
	assert.Equal(t, int64(1), stats[0].Jobs)

	require.NoError(t, f.q.RemoveTrigger(ctx, "orders"))
	assert.ErrorIs(t, f.q.RemoveTrigger(ctx, "orders"), job.ErrNotFound)
}

// sortedValues are m's values, sorted.
func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestHelperTriggerRunnerProcess is not a test: it is the process that
// TestATriggerSurvivesItsRunnersDeath starts and SIGKILLs, a Queue Master that declares
// the trigger of the orders table of RJQ_HELPER_TRIGGER_DB and runs it.
func TestHelperTriggerRunnerProcess(t *testing.T) {
	q := helperQueue(t, "RJQ_HELPER_TRIGGER_DB", "the trigger runner process", queue.Options{MasterInterval: time.Hour})
	require.NoError(t, q.AddTrigger(context.Background(), queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(q)}))
	select {} // until killed
}

// A trigger's runner SIGKILLed while orders are written: another process that declared the
// trigger takes it over when the dead one's lease ends, and every order gets one job, none
// missed and none twice.
func TestATriggerSurvivesItsRunnersDeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	if f.srv.IsReqlite() {
		t.Skip(reqliteTies)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := newOrders(t, f)
	cmd := helperProcess(t, "TestHelperTriggerRunnerProcess", "RJQ_HELPER_TRIGGER_DB", f.db, f.srv.Addr)
	dead := waitRunner(t, f.q, "orders")
	other := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	require.NoError(t, other.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(other)}))

	var want []string
	for i := range 300 {
		id := fmt.Sprint("o", i)
		o.write(id, "placed")
		want = append(want, id+":placed")
		if i == 100 {
			require.NoError(t, cmd.Process.Kill())
		}
	}
	took := time.Now()
	require.Eventually(t, func() bool {
		stats, err := f.q.Triggers(ctx)
		return err == nil && stats[0].Runner == other.ID()
	}, 20*time.Second, 50*time.Millisecond, "the other process takes over from %s", dead)
	t.Logf("taken over %v after the kill's writes", time.Since(took).Round(100*time.Millisecond))
	waitJobs(t, f, want...)
	assert.Len(t, triggerJobs(t, f), 300, "one job an order")
}

// A runner whose connections go silent (no reset: packets dropped, for good) notices that
// its feed brings nothing of a version written since, gives the silent connections up
// and catches up: the version written after the fault gets its job.
func TestATriggerGetsOverASilentFeed(t *testing.T) {
	if raceDetector {
		t.Skip("redials from several goroutines at once meet the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	o := newOrders(t, f)
	q, proxy := faultyQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	require.NoError(t, q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(q)}))
	waitRunner(t, f.q, "orders")
	o.write("o1", "placed")
	waitJobs(t, f, "o1:placed")

	proxy.Blackhole(2 * time.Second) // every open connection silent for good, new ones for 2 s
	o.write("o2", "placed")          // written directly, not through the proxy
	written := time.Now()
	waitJobs(t, f, "o1:placed", "o2:placed")
	t.Logf("o2's job came %v after its write", time.Since(written).Round(100*time.Millisecond))
}

// A version whose index value is a string (written by hand) sorts after every time: a
// catch-up skips it without moving its cursor there, so the versions written after it
// still get their jobs, and it counts as no lag.
func TestATriggerCatchUpPassesOverAString(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	o := newOrders(t, f)
	_, err := o.tb.Insert(map[string]any{"id": "text", "status": "placed", "updatedAt": "yesterday"}).RunWrite(f.raw)
	require.NoError(t, err)
	o.write("o1", "placed")
	master := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	require.NoError(t, master.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(master)}))
	waitJobs(t, f, "o1:placed")
	require.NoError(t, master.Stop(ctx))

	o.write("o2", "placed") // while nobody runs the trigger
	again := newQueue(t, f, &queue.Options{MasterInterval: time.Hour})
	require.NoError(t, again.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt", Job: orderJob(again)}))
	waitJobs(t, f, "o1:placed", "o2:placed")
	require.Eventually(t, func() bool {
		stats, err := f.q.Triggers(ctx)
		return err == nil && stats[0].Lag == 0 && stats[0].Skipped >= 1
	}, 10*time.Second, 50*time.Millisecond, "caught up, the string skipped")
}
