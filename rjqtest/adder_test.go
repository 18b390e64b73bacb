package rjqtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqtest"
)

func TestAdderRecordsJobsAsAQueueStoresThem(t *testing.T) {
	type signup struct {
		Email string    `json:"email"`
		At    time.Time `json:"at,omitempty"`
	}
	a := rjqtest.NewAdder(nil)
	j := a.CreateJob(signup{Email: "ann@example.com"}).SetName("welcome")
	assert.Equal(t, job.DefaultRetryMax, j.RetryMax, "the defaults, as a queue's CreateJob")
	added, err := a.AddJob(t.Context(), j)
	require.NoError(t, err)
	assert.Same(t, j, added[0])
	assert.Equal(t, job.Waiting, j.Status)
	assert.Equal(t, job.MessageAdded, j.GetLastLog().Message)

	got := a.Named("welcome")
	require.Len(t, got, 1)
	assert.Equal(t, map[string]any{"email": "ann@example.com"}, got[0].Data, "the stored form: json names")
	var back signup
	require.NoError(t, got[0].DataAs(&back))
	assert.Equal(t, "ann@example.com", back.Email)
	assert.Empty(t, a.Named("other"))
}

func TestAdderRefusesWhatAQueueRefuses(t *testing.T) {
	a := rjqtest.NewAdder(&job.Options{RetryMax: job.NoRetries})
	ctx := t.Context()
	assert.Zero(t, a.CreateJob(nil).RetryMax)

	_, err := a.AddJob(ctx)
	assert.ErrorIs(t, err, queue.ErrNoJobs)
	_, err = a.AddJob(ctx, nil)
	assert.ErrorIs(t, err, queue.ErrNilJob)
	_, err = a.AddJob(ctx, a.CreateJob(nil).SetPriority(7))
	assert.ErrorIs(t, err, job.ErrInvalidPriority)
	_, err = a.AddJob(ctx, a.CreateJob(map[string]any{"f": func() {}}))
	assert.ErrorIs(t, err, job.ErrInvalidData)
	j := a.CreateJob(nil)
	_, err = a.AddJob(ctx, j, j)
	assert.ErrorIs(t, err, job.ErrInvalidID, "the same id twice in one call")
	assert.Empty(t, a.Jobs(), "nothing added by a refused call")

	_, err = a.AddJob(ctx, j)
	require.NoError(t, err)
	_, err = a.AddJob(ctx, j)
	assert.ErrorIs(t, err, job.ErrExists)

	boom := errors.New("server down")
	a.FailWith(boom)
	_, err = a.AddJob(ctx, a.CreateJob(nil))
	assert.ErrorIs(t, err, boom)
	a.FailWith(nil)
	assert.Len(t, a.Jobs(), 1)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = a.AddJob(cancelled, a.CreateJob(nil))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestAdderKeepsAUniqueKeysJob(t *testing.T) {
	a := rjqtest.NewAdder(nil)
	first, err := a.AddJob(t.Context(), a.CreateJob("first").SetUniqueKey("invoice-7"))
	require.NoError(t, err)
	second, err := a.AddJob(t.Context(), a.CreateJob("second").SetUniqueKey("invoice-7"))
	require.NoError(t, err)
	assert.Equal(t, first[0].ID, second[0].ID)
	assert.Equal(t, "first", second[0].Data, "the unfinished job of the key is returned")
	assert.True(t, second[0].Duplicate())
	assert.False(t, first[0].Duplicate())
	assert.Len(t, a.Jobs(), 1)
}

// A debounced add replaces the waiting job of its key and starts a debounce from now.
func TestAdderDebounces(t *testing.T) {
	a := rjqtest.NewAdder(nil)
	for n := range 3 {
		got, err := a.AddJob(t.Context(), a.CreateJob(n).SetUniqueKey("reindex").SetDebounce(time.Minute))
		require.NoError(t, err)
		assert.False(t, got[0].Duplicate(), "add %d", n)
		assert.WithinDuration(t, time.Now().Add(time.Minute), got[0].DateEnable, 5*time.Second)
	}
	jobs := a.Jobs()
	require.Len(t, jobs, 1)
	assert.Equal(t, float64(2), jobs[0].Data, "the last add's data")
}

func TestAdderIsSafeForConcurrentUse(t *testing.T) {
	a := rjqtest.NewAdder(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := a.AddJob(t.Context(), a.CreateJob(nil))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Len(t, a.Jobs(), 400)
}

// NewQueue gives a ready queue of its own: it adds and processes at once, with no init
// delay, and its database goes when the test ends.
func TestNewQueue(t *testing.T) {
	var db string
	t.Run("a queue", func(t *testing.T) {
		q := rjqtest.NewQueue(t, &queue.Options{Name: "mail"})
		db = q.DB()
		assert.Equal(t, "mail", q.Name())
		assert.False(t, q.Master(), "no Queue Master unless asked")
		require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return "sent", nil }))
		added := rjqtest.RequireAdded(t, q, q.CreateJob(nil))
		done := rjqtest.RequireCompleted(t, q, added[0].ID, 10*time.Second)
		var got string
		require.NoError(t, done.Result(&got))
		assert.Equal(t, "sent", got)

		other := rjqtest.NewQueue(t, nil)
		assert.NotEqual(t, db, other.DB(), "a database for each queue")
	})
	s, err := r.Connect(r.ConnectOpts{Address: rjqtest.Addr(t)})
	require.NoError(t, err)
	defer s.Close()
	var exists bool
	require.NoError(t, r.DBList().Contains(db).ReadOne(&exists, s))
	assert.False(t, exists, "the database was dropped when the test ended")
}

// A job with parents is recorded blocked, as a queue adds it; one whose parents are
// neither in the call nor added before is refused, as a queue refuses it.
func TestAdderKeepsAWorkflowsChildBlocked(t *testing.T) {
	a := rjqtest.NewAdder(nil)
	parent := a.CreateJob("p")
	child := a.CreateJob("c").SetDependsOn(parent.ID)
	out, err := a.AddJob(t.Context(), parent, child)
	require.NoError(t, err)
	assert.Equal(t, job.Waiting, out[0].Status)
	assert.Equal(t, job.Blocked, out[1].Status)
	assert.Equal(t, job.MessageAddedBlocked, out[1].Log[0].Message)
	later := a.CreateJob("later").SetDependsOn(parent.ID)
	_, err = a.AddJob(t.Context(), later)
	require.NoError(t, err, "a parent added before")

	orphan := a.CreateJob("o").SetDependsOn(job.New(nil, job.Options{}).ID)
	_, err = a.AddJob(t.Context(), orphan)
	assert.ErrorIs(t, err, job.ErrInvalidDependsOn)
	assert.Len(t, a.Jobs(), 3, "nothing added")
}
