package queue_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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

func TestNewDefaultsAndState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	q := f.q
	assert.Equal(t, "rjqJobList", q.Name())
	assert.Equal(t, f.db, q.DB())
	assert.Equal(t, f.srv.Host, q.Host())
	assert.Equal(t, f.srv.Port, q.Port())
	assert.True(t, q.ChangeFeed())
	assert.True(t, q.Master())
	assert.Equal(t, 310*time.Second, q.MasterInterval())
	assert.Equal(t, 1000, q.LimitJobLogs())
	assert.Equal(t, 180*24*time.Hour, q.RemoveFinishedJobs())
	assert.Equal(t, 1, q.Concurrency())
	assert.Equal(t, job.DefaultOptions(), q.JobOptions())

	host, _ := os.Hostname()
	parts := strings.Split(q.ID(), ":")
	require.Len(t, parts, 5, "id is hostname:db:name:pid:uuid, got %s", q.ID())
	assert.Equal(t, []string{host, f.db, "rjqJobList", strconv.Itoa(os.Getpid())}, parts[:4])
	assert.True(t, job.ValidID(parts[4]))

	// The table and the five indexes exist once the queue is ready.
	var indexes []string
	cur, err := f.table().IndexList().Run(f.raw)
	require.NoError(t, err)
	require.NoError(t, cur.All(&indexes))
	assert.ElementsMatch(t, dbinit.Indexes, indexes)
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{
		Name: "mail", Concurrency: 4, MasterInterval: -1, NoChangeFeed: true, LimitJobLogs: 10,
		RemoveFinishedJobs: queue.KeepFinishedJobs,
		JobOptions:         &job.Options{Priority: job.Low, Timeout: time.Second},
	})
	q := f.q
	assert.Equal(t, "mail", q.Name())
	assert.Equal(t, 4, q.Concurrency())
	assert.False(t, q.Master())
	assert.False(t, q.ChangeFeed())
	assert.Equal(t, 10, q.LimitJobLogs())
	assert.Equal(t, queue.KeepFinishedJobs, q.RemoveFinishedJobs())
	j := q.CreateJob(nil)
	assert.Equal(t, job.Low, j.Priority)
	assert.Equal(t, job.DefaultRetryMax, j.RetryMax, "a zero RetryMax is the default")
	j = f.add(t, 1)[0]
	assert.Equal(t, float64(1000), f.rawDoc(t, j.ID)["timeout"])
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, tc := range []struct {
		cxn  *queue.ConnectOptions
		opts *queue.Options
	}{
		{nil, &queue.Options{Name: "bad name"}},
		{&queue.ConnectOptions{DB: "bad.db"}, nil},
		{&queue.ConnectOptions{Port: 70000}, nil},
		{nil, &queue.Options{Concurrency: -1}},
		{nil, &queue.Options{JobOptions: &job.Options{Timeout: -1}}},
	} {
		q, err := queue.New(ctx, tc.cxn, tc.opts)
		assert.Nil(t, q)
		assert.ErrorIs(t, err, queue.ErrInvalidOption, "%+v %+v", tc.cxn, tc.opts)
		assert.ErrorIs(t, err, job.ErrInvalid)
	}
}

func TestNewWithoutServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close()) // nothing listens there now
	start := time.Now()
	q, err := queue.New(testContext(t), &queue.ConnectOptions{Host: "127.0.0.1", Port: port}, nil)
	assert.Nil(t, q)
	assert.ErrorIs(t, err, queue.ErrConnect)
	assert.Contains(t, err.Error(), fmt.Sprintf("127.0.0.1:%d", port), "the error names the address")
	assert.Less(t, time.Since(start), 5*time.Second, "a refused connection fails fast")
}

func TestStop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	before := f.rawDoc(t, j.ID)
	events := f.q.Events(ctx, queue.EventStopping, queue.EventStopped)
	require.NoError(t, f.q.Stop(ctx))

	var got []queue.EventType
	for e := range events {
		got = append(got, e.Type)
	}
	assert.Equal(t, []queue.EventType{queue.EventStopping, queue.EventStopped}, got, "the channel is closed after stopped")
	_, open := <-f.q.Events(ctx)
	assert.False(t, open, "a subscription after Stop is closed at once")

	calls := map[string]error{
		"Stop":  f.q.Stop(ctx),
		"Drop":  f.q.Drop(ctx),
		"Ready": nil,
	}
	_, calls["AddJob"] = f.q.AddJob(ctx, f.q.CreateJob(1))
	_, calls["GetJob"] = f.q.GetJob(ctx, j.ID)
	_, calls["FindJob"] = f.q.FindJob(ctx, map[string]any{})
	_, calls["FindJobByName"] = f.q.FindJobByName(ctx, "x")
	_, calls["ContainsJobByName"] = f.q.ContainsJobByName(ctx, "x")
	_, calls["CancelJob"] = f.q.CancelJob(ctx, "", j.ID)
	_, calls["ReanimateJob"] = f.q.ReanimateJob(ctx, time.Time{}, j.ID)
	_, calls["RemoveJob"] = f.q.RemoveJob(ctx, j.ID)
	_, calls["Summary"] = f.q.Summary(ctx)
	_, calls["Reset"] = f.q.Reset(ctx)
	calls["Update"] = j.Update(ctx)
	calls["AddLog"] = j.AddLog(ctx, nil, "", "", "")
	delete(calls, "Ready")
	for name, err := range calls {
		assert.ErrorIs(t, err, queue.ErrStopped, name)
	}
	assert.Equal(t, before, f.rawDoc(t, j.ID), "nothing was written after Stop")
	assert.Equal(t, 1, f.count(t), "nothing was added or removed after Stop")
}

func TestStopKeepsAGivenSession(t *testing.T) {
	t.Parallel()
	srv := testserver.Get(t)
	db := testserver.DB(t)
	session := testserver.Session(t)
	ctx := testContext(t)
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: session, DB: db}, queuetest.Options(queue.Options{}))
	require.NoError(t, err)
	require.NoError(t, q.Ready(ctx))
	assert.Equal(t, queue.DefaultHost, q.Host(), "an injected session reports the given (default) host")
	_, err = q.AddJob(ctx, q.CreateJob(1))
	require.NoError(t, err)
	require.NoError(t, q.Stop(ctx))
	assert.True(t, session.IsConnected(), "the caller's session stays open")
	_, err = r.Expr(1).Run(session)
	assert.NoError(t, err)
	_ = srv
}

func TestDrop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Name: "dropme"})
	f.add(t, 2)
	events := collect(t, f.q, queue.EventDropped)
	require.NoError(t, f.q.Drop(testContext(t)))
	var tables []string
	cur, err := r.DB(f.db).TableList().Run(f.raw)
	require.NoError(t, err)
	require.NoError(t, cur.All(&tables))
	assert.NotContains(t, tables, "dropme")
	assert.Len(t, events(1), 1)
	assert.ErrorIs(t, f.q.Stop(testContext(t)), queue.ErrStopped)
}

func TestStopBeforeReady(t *testing.T) {
	t.Parallel()
	srv := testserver.Get(t)
	db := testserver.DB(t)
	ctx := testContext(t)
	q, err := queue.New(ctx, queuetest.ConnectTo(srv, db), &queue.Options{DatabaseInitDelay: time.Hour})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, q.Stop(ctx))
	assert.Less(t, time.Since(start), 2*time.Second, "Stop does not wait for the init delay")
	assert.ErrorIs(t, q.Ready(ctx), queue.ErrStopped)
}

func TestReadyHonoursContext(t *testing.T) {
	t.Parallel()
	srv := testserver.Get(t)
	ctx := testContext(t)
	// Not a master: a master skips the fixed hour, and its random 0–1s could end first.
	q, err := queue.New(ctx, queuetest.ConnectTo(srv, testserver.DB(t)),
		&queue.Options{DatabaseInitDelay: time.Hour, MasterInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, q.Ready(short), context.DeadlineExceeded)
	_, err = q.GetJob(short, unknownID)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "calls wait for Ready with their own context: %v", err)
}

func TestSetConcurrencyAndJobOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := collect(t, f.q, queue.EventError)
	require.NoError(t, f.q.SetConcurrency(3))
	assert.Equal(t, 3, f.q.Concurrency())
	err := f.q.SetConcurrency(0)
	assert.ErrorIs(t, err, queue.ErrInvalidOption)
	assert.Equal(t, 3, f.q.Concurrency())
	assert.ErrorIs(t, events(1)[0].Err, queue.ErrInvalidOption, "an error event is raised too, as in the original")

	opts := job.DefaultOptions()
	opts.Priority = job.Highest
	opts.Name = "batch"
	require.NoError(t, f.q.SetJobOptions(opts))
	j := f.q.CreateJob(nil)
	assert.Equal(t, job.Highest, j.Priority)
	assert.Equal(t, "batch", j.Name)
	opts.Timeout = -1
	assert.ErrorIs(t, f.q.SetJobOptions(opts), job.ErrInvalidTimeout)
	assert.Equal(t, job.Highest, f.q.JobOptions().Priority, "refused options change nothing")
	assert.Equal(t, time.Duration(job.DefaultTimeout), f.q.JobOptions().Timeout)
}

// ConnectOptions.Addresses dials the servers given; an unreachable one among them is
// skipped.
func TestConnectThroughAddresses(t *testing.T) {
	t.Parallel()
	srv := testserver.Get(t)
	ctx := testContext(t)
	q, err := queue.New(ctx, &queue.ConnectOptions{Addresses: []string{srv.Addr}, DB: testserver.DB(t)},
		queuetest.Options(queue.Options{MasterInterval: -1}))
	require.NoError(t, err)
	defer q.Stop(context.Background())
	require.NoError(t, q.Ready(ctx))
	added, err := q.AddJob(ctx, q.CreateJob(nil))
	require.NoError(t, err)
	assert.Len(t, added, 1)
	assert.Equal(t, srv.Host, q.Host())
}
