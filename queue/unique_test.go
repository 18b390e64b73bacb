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

// The signup case: a job posted twice 300 ms apart runs once when its key has a window,
// though the first had completed; the second add returns the first job, marked Duplicate.
// After the window a new job of the key replaces the finished one, and a queue that
// follows the table hears an add, not progress.
func TestUniqueForKeepsAFinishedJobForItsWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	watcher := newQueue(t, f, &queue.Options{MasterInterval: -1})
	seen := watcher.Events(ctx, queue.EventAdded, queue.EventProgress)
	var mu sync.Mutex
	var ran []any
	require.NoError(t, f.q.Process(func(_ context.Context, j *job.Job) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, j.Data)
		return nil, nil
	}))
	events := f.q.Events(ctx, queue.EventCompleted)
	signup := func(data string, window time.Duration) *job.Job {
		t.Helper()
		got, err := f.q.AddJob(ctx, f.q.CreateJob(data).SetUniqueKey("welcome:ann").SetUniqueFor(window))
		require.NoError(t, err)
		return got[0]
	}
	first := signup("first", time.Hour)
	assert.False(t, first.Duplicate())
	waitForAll(t, events, queue.EventCompleted, first)
	waitFor(t, seen, queue.EventAdded, first.ID)

	time.Sleep(300 * time.Millisecond) // the user's second post, 300 ms later
	second := signup("second", time.Hour)
	assert.True(t, second.Duplicate(), "the second post is a duplicate")
	assert.Equal(t, first.ID, second.ID)
	assert.Equal(t, job.Completed, second.Status, "AddJob returns the finished job")
	assert.Equal(t, "first", f.get(t, first.ID).Data)

	// A window shorter than the time since it finished lets a new job in.
	third := signup("third", time.Millisecond)
	assert.False(t, third.Duplicate())
	waitForAll(t, events, queue.EventCompleted, third)
	mu.Lock()
	assert.Equal(t, []any{"first", "third"}, ran, "the duplicate never ran")
	mu.Unlock()
	select {
	case e := <-seen:
		assert.Equal(t, queue.EventAdded, e.Type, "the replacement reaches other queues as an add")
		assert.Equal(t, third.ID, e.JobID)
	case <-time.After(15 * time.Second):
		t.Fatal("the watcher heard nothing of the replacement")
	}
}

// A burst of debounced adds runs the job once, a debounce after the last add, with the
// last add's data; an add while the job runs returns it as a duplicate.
func TestDebounceRunsABurstOnceWithTheLastData(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	var mu sync.Mutex
	var ran []any
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(_ context.Context, j *job.Job) (any, error) {
		mu.Lock()
		ran = append(ran, j.Data)
		mu.Unlock()
		<-release
		return nil, nil
	}))
	events := f.q.Events(ctx, queue.EventActive, queue.EventCompleted)
	add := func(n int) *job.Job {
		t.Helper()
		got, err := f.q.AddJob(ctx, f.q.CreateJob(n).SetUniqueKey("reindex").SetDebounce(2*time.Second))
		require.NoError(t, err)
		return got[0]
	}
	// The burst: 100 adds (within a second on a real server).
	var last *job.Job
	start := time.Now()
	for n := range 100 {
		last = add(n)
		assert.False(t, last.Duplicate(), "add %d replaces the waiting job", n)
	}
	t.Logf("100 debounced adds in %v", time.Since(start).Round(time.Millisecond))
	waitForAll(t, events, queue.EventActive, last)
	during := add(1000)
	assert.True(t, during.Duplicate(), "an add while the job runs is a duplicate")
	close(release)
	waitForAll(t, events, queue.EventCompleted, last)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []any{float64(99)}, ran, "one run, with the last data")
	assert.Equal(t, float64(99), f.get(t, last.ID).Data)
}

func TestUniqueForAndDebounceBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for _, tc := range []struct {
		j    *job.Job
		want error
	}{
		{f.q.CreateJob(nil).SetUniqueKey("k").SetUniqueFor(-time.Second), job.ErrInvalidUniqueFor},
		{f.q.CreateJob(nil).SetUniqueKey("k").SetDebounce(0), job.ErrInvalidDebounce},
		{f.q.CreateJob(nil).SetUniqueFor(time.Hour), job.ErrInvalidUniqueFor},
		{f.q.CreateJob(nil).SetDebounce(time.Second), job.ErrInvalidDebounce},
	} {
		_, err := f.q.AddJob(ctx, f.q.CreateJob(nil), tc.j)
		assert.ErrorIs(t, err, tc.want)
	}
	assert.Zero(t, f.count(t))
}
