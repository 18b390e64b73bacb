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

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestUniqueKeysMakeOneJobPerKeyUnderConcurrentAdds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{NoChangeFeed: true, MasterInterval: -1})
	queues := []*queue.Queue{f.q,
		newQueue(t, f, &queue.Options{NoChangeFeed: true, MasterInterval: -1}),
		newQueue(t, f, &queue.Options{NoChangeFeed: true, MasterInterval: -1})}
	const keys = 50
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(queues))
	for _, q := range queues {
		for range 8 {
			wg.Go(func() {
				jobs := make([]*job.Job, keys)
				for k := range jobs {
					jobs[k] = q.CreateJob(k).SetUniqueKey(fmt.Sprintf("report-%d", k))
				}
				got, err := q.AddJob(testContext(t), jobs...)
				if err == nil && len(got) != keys {
					err = fmt.Errorf("got %d jobs back, want %d", len(got), keys)
				}
				for k, j := range got {
					if err == nil && j.ID != job.UniqueID(fmt.Sprintf("report-%d", k)) {
						err = fmt.Errorf("job %d has id %s", k, j.ID)
					}
				}
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, keys, f.count(t), "exactly one job per key")
}

func TestUniqueKeyReturnsTheJobAlreadyThereAndReplacesAFinishedOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	first, err := f.q.AddJob(ctx, f.q.CreateJob("first").SetUniqueKey("k"))
	require.NoError(t, err)
	assert.Equal(t, "k", first[0].UniqueKey())

	dup := f.q.CreateJob("second").SetUniqueKey("k")
	plain := f.q.CreateJob("plain")
	got, err := f.q.AddJob(ctx, dup, plain)
	require.NoError(t, err, "a duplicate key is not an error")
	require.Len(t, got, 2)
	assert.Equal(t, first[0].ID, got[0].ID)
	assert.Equal(t, "first", got[0].Data, "the job already there is returned")
	assert.Equal(t, job.Created, dup.Status, "the duplicate was not added")
	assert.Same(t, plain, got[1])
	assert.Equal(t, 2, f.count(t))

	_, err = f.q.CancelJob(ctx, "done with it", first[0].ID)
	require.NoError(t, err)
	again, err := f.q.AddJob(ctx, f.q.CreateJob("third").SetUniqueKey("k"))
	require.NoError(t, err)
	assert.Equal(t, "third", f.get(t, again[0].ID).Data, "a finished job of the key is replaced")
	assert.Equal(t, job.Waiting, f.get(t, again[0].ID).Status)
}

func TestUniqueKeyBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, key := range []string{"", "\xff"} {
		_, err := f.q.AddJob(testContext(t), f.q.CreateJob(nil), f.q.CreateJob(nil).SetUniqueKey(key))
		assert.ErrorIs(t, err, job.ErrInvalidUniqueKey)
	}
	assert.Zero(t, f.count(t))
}

// A key is free again once its job is finished however it ended, or removed.
func TestUniqueKeyIsFreedWhenItsJobEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	outcomes := map[string]func(context.Context, *job.Job) (any, error){
		"completed":  func(context.Context, *job.Job) (any, error) { return "ok", nil },
		"terminated": func(context.Context, *job.Job) (any, error) { return nil, errors.New("no") },
		"cancelled":  func(context.Context, *job.Job) (any, error) { return nil, job.Cancel("enough") },
	}
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		return outcomes[j.UniqueKey()](ctx, j)
	}))
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventTerminated, queue.EventCancelled)
	for key := range outcomes {
		first, err := f.q.AddJob(ctx, f.q.CreateJob("first").SetUniqueKey(key).SetRetryMax(0))
		require.NoError(t, err)
		waitForAll(t, events, queue.EventType(key), first...)
		again, err := f.q.AddJob(ctx, f.q.CreateJob("again").SetUniqueKey(key).SetRetryMax(0))
		require.NoError(t, err)
		assert.Equal(t, "again", f.get(t, again[0].ID).Data, "key %s: a new job once the last %s", key, key)
		waitForAll(t, events, queue.EventType(key), again...)
	}
	removed, err := f.q.AddJob(ctx, f.q.CreateJob("held").SetUniqueKey("removed").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	_, err = f.q.RemoveJob(ctx, removed[0].ID)
	require.NoError(t, err)
	again, err := f.q.AddJob(ctx, f.q.CreateJob("again").SetUniqueKey("removed").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	assert.Equal(t, "again", f.get(t, again[0].ID).Data, "a new job once the last was removed")
}
