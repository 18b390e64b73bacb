package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// fixture is a ready queue in a database of the test's own, with a raw session to check
// what the queue wrote.
type fixture struct {
	q   *queue.Queue
	db  string
	raw *r.Session
	srv testserver.Server
}

func (f fixture) table() r.Term { return r.DB(f.db).Table(f.q.Name()) }

// newFixture starts a queue for the test; it is stopped when the test ends.
func newFixture(t *testing.T, opts *queue.Options) fixture {
	t.Helper()
	srv := testserver.Get(t)
	f := fixture{db: testserver.DB(t), raw: testserver.Session(t), srv: srv}
	f.q = newQueue(t, f, opts)
	return f
}

// newQueue starts another queue on the fixture's database.
func newQueue(t *testing.T, f fixture, opts *queue.Options) *queue.Queue {
	t.Helper()
	if opts == nil {
		opts = &queue.Options{}
	}
	if opts.DatabaseInitDelay == 0 {
		opts.DatabaseInitDelay = -1
	}
	ctx := testContext(t)
	q, err := queue.New(ctx, queuetest.ConnectTo(f.srv, f.db), opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := q.Stop(context.Background()); err != nil && !errors.Is(err, queue.ErrStopped) {
			t.Errorf("stop: %v", err)
		}
	})
	require.NoError(t, q.Ready(ctx))
	return q
}

// testContext ends with the test, and after a minute at most.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// rawDoc reads a stored document as the database holds it.
func (f fixture) rawDoc(t *testing.T, id string) map[string]any {
	t.Helper()
	cur, err := f.table().Get(id).Run(f.raw)
	require.NoError(t, err)
	defer cur.Close()
	var doc map[string]any
	if err := cur.One(&doc); errors.Is(err, r.ErrEmptyResult) {
		return nil
	} else {
		require.NoError(t, err)
	}
	return doc
}

// count returns how many documents the queue's table holds.
func (f fixture) count(t *testing.T) int {
	t.Helper()
	cur, err := f.table().Count().Run(f.raw)
	require.NoError(t, err)
	var n int
	require.NoError(t, cur.One(&n))
	return n
}

// setRaw changes stored fields behind the queue's back, as another process would.
func (f fixture) setRaw(t *testing.T, id string, fields map[string]any) {
	t.Helper()
	_, err := f.table().Get(id).Update(fields).RunWrite(f.raw)
	require.NoError(t, err)
}

// add adds n jobs with the queue's defaults and returns them.
func (f fixture) add(t *testing.T, n int) []*job.Job {
	t.Helper()
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = f.q.CreateJob(i)
	}
	added, err := f.q.AddJob(testContext(t), jobs...)
	require.NoError(t, err)
	return added
}

// get reads one job back through the queue.
func (f fixture) get(t *testing.T, id string) *job.Job {
	t.Helper()
	jobs, err := f.q.GetJob(testContext(t), id)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

// within asserts that got is within d of want.
func within(t *testing.T, want, got time.Time, d time.Duration) {
	t.Helper()
	diff := got.Sub(want)
	if diff < -d || diff > d {
		t.Errorf("time %v is %v away from %v (allowed %v)", got, diff, want, d)
	}
}

// collect subscribes to the queue's events before an action, and returns the events of
// that type seen within a short wait after it.
func collect(t *testing.T, q *queue.Queue, types ...queue.EventType) func(n int) []queue.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := q.Events(ctx, types...)
	return func(n int) []queue.Event {
		t.Helper()
		var got []queue.Event
		deadline := time.After(5 * time.Second)
		for len(got) < n {
			select {
			case e, ok := <-ch:
				if !ok {
					return got
				}
				got = append(got, e)
			case <-deadline:
				t.Fatalf("waited for %d %v events, got %d: %+v", n, types, len(got), got)
			}
		}
		return got
	}
}
