package rjq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func connectTo(srv testserver.Server, db string) *queue.ConnectOptions {
	return queuetest.ConnectTo(srv, db)
}

// Queues started together on a fresh server must end with one database, one table and one
// of each index, and none of them may fail: the randomized init delay and the create steps
// that accept "already exists" see to it.
func TestQueuesStartedTogetherShareOneTable(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const n = 5
	queues := make([]*queue.Queue, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: "shared"}))
			if err == nil {
				err = q.Ready(ctx)
				t.Cleanup(func() { _ = q.Stop(context.Background()) })
			}
			queues[i], errs[i] = q, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "queue %d", i)
	}

	session := testserver.Session(t)
	var dbs, tables, indexes []string
	readAll(t, session, r.DBList().Filter(func(v r.Term) r.Term { return v.Eq(db) }), &dbs)
	readAll(t, session, r.DB(db).TableList(), &tables)
	readAll(t, session, r.DB(db).Table("shared").IndexList(), &indexes)
	assert.Equal(t, []string{db}, dbs, "exactly one database")
	assert.Equal(t, []string{"shared"}, tables, "exactly one table")
	assert.ElementsMatch(t, dbinit.Indexes, indexes, "exactly the five indexes")

	// Every queue works on the one table: a job added by one is seen by all.
	added, err := queues[0].AddJob(ctx, queues[0].CreateJob("hello").SetName("greeting"))
	require.NoError(t, err)
	for i, q := range queues {
		got, err := q.GetJob(ctx, added[0].ID)
		require.NoError(t, err, "queue %d", i)
		assert.Equal(t, "hello", got[0].Data)
	}
}

// The life of a job through the administration calls, the way a user strings them
// together, checked against what is stored.
func TestJobAdministrationEndToEnd(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{}))
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Stop(ctx)) }()

	jobs := []*job.Job{
		q.CreateJob(map[string]any{"to": "ann@example.com"}).SetName("welcome").SetPriority(job.High),
		q.CreateJob(map[string]any{"to": "bob@example.com"}).SetName("welcome"),
		q.CreateJob("report").SetDateEnable(time.Now().Add(time.Hour)),
	}
	_, err = q.AddJob(ctx, jobs...)
	require.NoError(t, err)

	s, err := q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Summary{Waiting: 3, Total: 3}, s)

	welcome, err := q.FindJobByName(ctx, "welcome")
	require.NoError(t, err)
	require.Len(t, welcome, 2)
	var payload struct{ To string }
	require.NoError(t, welcome[0].DataAs(&payload))
	assert.Equal(t, "ann@example.com", payload.To)

	_, err = q.CancelJob(ctx, "customer left", welcome[1].ID)
	require.NoError(t, err)
	s, err = q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.Summary{Waiting: 2, Cancelled: 1, Total: 3}, s)

	_, err = q.ReanimateJob(ctx, time.Time{}, welcome[1].ID)
	require.NoError(t, err)
	back, err := q.GetJob(ctx, welcome[1].ID)
	require.NoError(t, err)
	messages := []string{}
	for _, e := range back[0].Log {
		messages = append(messages, e.Message)
	}
	assert.Equal(t, []string{job.MessageAdded, "customer left", job.MessageReanimated}, messages)

	_, err = q.RemoveJob(ctx, jobs[2].ID)
	require.NoError(t, err)
	n, err := q.Reset(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

func readAll(t *testing.T, s *r.Session, term r.Term, dst any) {
	t.Helper()
	cur, err := term.Run(s)
	require.NoError(t, err)
	require.NoError(t, cur.All(dst))
}

// Several processes' worth of queues, each with its own connection, compete for the same
// jobs: every job must run exactly once.
func TestManyQueuesProcessEachJobExactlyOnce(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const queues, jobs = 4, 300

	var mu sync.Mutex
	calls := make(map[string]int, jobs)
	handler := func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		calls[j.ID]++
		mu.Unlock()
		return nil, nil
	}
	workers := runWorkers(t, ctx, srv, db, queues, queuetest.Options(queue.Options{Name: "race", Concurrency: 5}),
		jobs, func(q *queue.Queue, i int) *job.Job { return q.CreateJob(i) }, handler)
	waitCompleted(t, ctx, workers[0], jobs, 2*time.Minute)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, calls, jobs)
	for id, n := range calls {
		if n != 1 {
			t.Errorf("job %s ran %d times", id, n)
		}
	}
	for _, q := range workers {
		require.NoError(t, q.Stop(ctx))
	}
}

// runWorkers starts n queues on one table, each with a connection of its own (as n
// processes would), adds jobs made by create through the first in one batch, and has
// every queue process them with handler.
func runWorkers(t *testing.T, ctx context.Context, srv testserver.Server, db string, n int, opts *queue.Options,
	jobs int, create func(q *queue.Queue, i int) *job.Job, handler queue.Handler) []*queue.Queue {
	t.Helper()
	workers := make([]*queue.Queue, n)
	for i := range workers {
		o := *opts
		q, err := queue.New(ctx, connectTo(srv, db), &o)
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Stop(context.Background()) })
		require.NoError(t, q.Ready(ctx))
		workers[i] = q
	}
	batch := make([]*job.Job, jobs)
	for i := range batch {
		batch[i] = create(workers[0], i)
	}
	_, err := workers[0].AddJob(ctx, batch...)
	require.NoError(t, err)
	for _, q := range workers {
		require.NoError(t, q.Process(handler))
	}
	return workers
}

// waitCompleted waits until q's table holds n completed jobs.
func waitCompleted(t *testing.T, ctx context.Context, q *queue.Queue, n int, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, err := q.Summary(ctx)
		return err == nil && s.Completed == n
	}, within, 50*time.Millisecond, "every job completes")
}

// A table split into shards, each with its own primary, is the way past one server's
// write capacity: on one, jobs still run exactly once across queues, and in priority
// order.
func TestAShardedTableProcessesEachJobOnceInPriorityOrder(t *testing.T) {
	testserver.SkipOnReqlite(t, "it has no shards")
	srv := testserver.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	priorities := []job.Priority{job.Lowest, job.Low, job.Normal, job.Medium, job.High, job.Highest}

	t.Run("exactly once", func(t *testing.T) {
		db := testserver.DB(t)
		const queues, jobs = 4, 300
		var mu sync.Mutex
		calls := make(map[string]int, jobs)
		workers := runWorkers(t, ctx, srv, db, queues, queuetest.Options(queue.Options{Name: "sharded", Concurrency: 5, Shards: 3}),
			jobs, func(q *queue.Queue, i int) *job.Job { return q.CreateJob(i).SetPriority(priorities[i%len(priorities)]) },
			func(ctx context.Context, j *job.Job) (any, error) {
				mu.Lock()
				calls[j.ID]++
				mu.Unlock()
				return nil, nil
			})
		requireShards(t, ctx, srv, db, "sharded", 3)
		waitCompleted(t, ctx, workers[0], jobs, 2*time.Minute)
		mu.Lock()
		defer mu.Unlock()
		assert.Len(t, calls, jobs)
		for id, n := range calls {
			if n != 1 {
				t.Errorf("job %s ran %d times", id, n)
			}
		}
	})

	t.Run("priority order", func(t *testing.T) {
		db := testserver.DB(t)
		const jobs = 60
		var mu sync.Mutex
		var order []job.Priority
		workers := runWorkers(t, ctx, srv, db, 1, queuetest.Options(queue.Options{Name: "sharded", Concurrency: 1, Shards: 3}),
			jobs, func(q *queue.Queue, i int) *job.Job { return q.CreateJob(i).SetPriority(priorities[i%len(priorities)]) },
			func(ctx context.Context, j *job.Job) (any, error) {
				mu.Lock()
				order = append(order, j.Priority)
				mu.Unlock()
				return nil, nil
			})
		waitCompleted(t, ctx, workers[0], jobs, 2*time.Minute)
		mu.Lock()
		defer mu.Unlock()
		// The first claim may come before the batch is whole (jobs are added in chunks);
		// from the second on, each job comes no sooner than one of a higher priority.
		for i := 2; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Errorf("job %d of priority %v ran after one of %v: %v", i, order[i], order[i-1], order)
				break
			}
		}
	})
}

// requireShards checks that the table has n shards.
func requireShards(t *testing.T, ctx context.Context, srv testserver.Server, db, table string, n int) {
	t.Helper()
	s := testserver.Session(t)
	var conf struct {
		Shards []any `rethinkdb:"shards"`
	}
	cur, err := r.DB(db).Table(table).Config().Run(s, r.RunOpts{Context: ctx})
	require.NoError(t, err)
	require.NoError(t, cur.One(&conf))
	require.Len(t, conf.Shards, n)
}

// Eight queues started at once on a fresh database, each creating every side table as
// it starts processing, sets a limit and adds a schedule, must make one table of each
// name, and Workers, Schedules and Limits must work from every queue.
// RJQ_TEST_SIDE_ROUNDS sets the number of rounds (default 3; 20 to check a real server).
func TestQueuesStartedTogetherMakeOneOfEachSideTable(t *testing.T) {
	srv := testserver.Get(t)
	rounds := 3
	if v := os.Getenv("RJQ_TEST_SIDE_ROUNDS"); v != "" {
		var err error
		rounds, err = strconv.Atoi(v)
		require.NoError(t, err, "RJQ_TEST_SIDE_ROUNDS")
	}
	for round := range rounds {
		if !t.Run(fmt.Sprint("round ", round+1), func(t *testing.T) { sideTablesRound(t, srv) }) {
			return
		}
	}
}

func sideTablesRound(t *testing.T, srv testserver.Server) {
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 8
	queues := make([]*queue.Queue, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: "side", MasterInterval: -1}))
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { _ = q.Stop(context.Background()) })
			queues[i] = q
			errs[i] = errors.Join(
				q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }),
				q.SetLimit(ctx, fmt.Sprint("name", i), queue.Limit{Starts: 10, Per: time.Minute}),
				q.Schedule(ctx, fmt.Sprint("every-hour-", i), "0 * * * *", nil, nil))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "queue %d", i)
	}
	// A worker's table is made as it starts processing, in the background: twins that
	// racers made are merged into one and dropped by then, or soon after.
	want := []string{"side", "side_limits", "side_schedules", "side_workers"}
	var tables []string
	session := testserver.Session(t)
	require.Eventually(t, func() bool {
		tables = nil
		readAll(t, session, r.DB(db).TableList().OrderBy(r.Row), &tables)
		return slices.Equal(want, tables)
	}, 30*time.Second, 50*time.Millisecond, "one table of each name")
	for i, q := range queues {
		require.Eventually(t, func() bool {
			w, err := q.Workers(ctx)
			return err == nil && len(w) == n
		}, 20*time.Second, 50*time.Millisecond, "queue %d sees every worker", i)
		s, err := q.Schedules(ctx)
		require.NoError(t, err, "queue %d: Schedules", i)
		assert.Len(t, s, n, "queue %d: Schedules", i)
		l, err := q.Limits(ctx)
		require.NoError(t, err, "queue %d: Limits", i)
		assert.Len(t, l, n, "queue %d: Limits", i)
	}
}
