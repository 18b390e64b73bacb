package rjq_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Four processes' worth of queues, each with its own connection and ten slots, process
// one batch with group-committed outcomes while one job in five fails its first run: every
// job must run exactly as often as it should (once, or twice for the failing ones), never
// twice at once, and end completed with the right retry count. 5,000 jobs on a real
// server; 500 on reqlite, which runs one query at a time and would take minutes.
func TestManyQueuesGroupCommitEachOutcomeOnce(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	jobs := 5000
	if srv.IsReqlite() {
		jobs = 500
	}
	const queues = 4
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var mu sync.Mutex
	runs := make(map[string]int, jobs)
	running := make(map[string]bool)
	var overlaps []string
	handler := func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		runs[j.ID]++
		if running[j.ID] {
			overlaps = append(overlaps, j.ID)
		}
		running[j.ID] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(running, j.ID)
			mu.Unlock()
		}()
		var n int
		if err := j.DataAs(&n); err != nil {
			return nil, err
		}
		if n%5 == 0 && j.RetryCount == 0 {
			return nil, errors.New("first run fails")
		}
		return n, nil
	}
	workers := runWorkers(t, ctx, srv, db, queues, queuetest.Options(queue.Options{Name: "group", Concurrency: 10, MasterInterval: -1}),
		jobs, func(q *queue.Queue, i int) *job.Job { return q.CreateJob(i).SetRetryMax(1).SetRetryDelay(0) }, handler)
	waitCompleted(t, ctx, workers[0], jobs, 4*time.Minute)
	for _, q := range workers {
		require.NoError(t, q.Stop(ctx))
	}

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, overlaps, "jobs run twice at once")
	var docs []struct {
		ID         string `rethinkdb:"id"`
		Status     string `rethinkdb:"status"`
		RetryCount int    `rethinkdb:"retryCount"`
		Data       int    `rethinkdb:"data"`
	}
	readAll(t, testserver.Session(t), r.DB(db).Table("group").Filter(r.Row.Field("id").Ne(job.StateDocumentID)), &docs)
	require.Len(t, docs, jobs)
	for _, d := range docs {
		want := 1
		if d.Data%5 == 0 {
			want = 2
		}
		if runs[d.ID] != want || d.Status != "completed" || d.RetryCount != want-1 {
			t.Errorf("job %d: ran %d times (want %d), status %s, retryCount %d", d.Data, runs[d.ID], want, d.Status, d.RetryCount)
		}
	}
}

// Two queues add overlapping batches at the same moment: exactly one batch is added whole,
// and the other call fails with job.ErrExists and leaves none of its jobs behind. (On
// reqlite, which runs one query at a time, the loser always sees the winner's jobs first;
// on a real server the two inserts race.)
func TestConcurrentAddJobIsAllOrNothing(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := queuetest.Options(queue.Options{Name: "adds", MasterInterval: -1, NoChangeFeed: true})
	a, err := queue.New(ctx, connectTo(srv, db), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Stop(context.Background()) })
	b, err := queue.New(ctx, connectTo(srv, db), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	require.NoError(t, a.Ready(ctx))
	require.NoError(t, b.Ready(ctx))
	session := testserver.Session(t)
	table := r.DB(db).Table("adds")

	for round := range 5 {
		shared := make([]string, 20)
		for i := range shared {
			shared[i] = a.CreateJob(nil).ID
		}
		batch := func(q *queue.Queue, unique int) []*job.Job {
			out := make([]*job.Job, 0, len(shared)+unique)
			for _, id := range shared {
				j := q.CreateJob("shared")
				j.ID = id
				out = append(out, j)
			}
			for range unique {
				out = append(out, q.CreateJob("unique"))
			}
			return out
		}
		ba, bb := batch(a, 300), batch(b, 300)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = a.AddJob(ctx, ba...) })
		wg.Go(func() { _, errB = b.AddJob(ctx, bb...) })
		wg.Wait()
		require.True(t, (errA == nil) != (errB == nil), "round %d: exactly one AddJob succeeds (a: %v, b: %v)", round, errA, errB)
		loser := errors.Join(errA, errB)
		assert.ErrorIs(t, loser, job.ErrExists, "round %d", round)
		var n int
		cur, err := table.Count(func(doc r.Term) r.Term { return doc.Field("id").Ne(job.StateDocumentID) }).Run(session)
		require.NoError(t, err)
		require.NoError(t, cur.One(&n))
		assert.Equal(t, 320, n, "round %d: the winner's jobs only", round)
		_, err = table.Delete().RunWrite(session)
		require.NoError(t, err)
	}
}

// A 100,000-job AddJob is written in chunks and every job arrives (3,000 on reqlite, which
// holds its tables in JavaScript memory; still three chunks and more).
func TestAddJobOfAHundredThousandJobs(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	n := 100_000
	if srv.IsReqlite() {
		n = 3000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: "big", MasterInterval: -1, NoChangeFeed: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = q.CreateJob(map[string]any{"n": i})
	}
	added, err := q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	assert.Len(t, added, n)
	s, err := q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, n, s.Waiting)
	// No stored time runs more than a second ahead of the truth.
	var newest time.Time
	cur, err := r.DB(db).Table("big").Field("dateCreated").Max().Run(testserver.Session(t))
	require.NoError(t, err)
	require.NoError(t, cur.One(&newest))
	assert.Less(t, time.Until(newest), time.Second, "dateCreated runs ahead of the clock")
}
