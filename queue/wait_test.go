package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestWaitReturnsTheFinishedJobFromAnotherProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{NoChangeFeed: true})
	worker := newQueue(t, f, nil)
	jobs := f.add(t, 2)
	ctx := testContext(t)

	type waited struct {
		j   *job.Job
		err error
	}
	done := make(chan waited, 1)
	go func() {
		j, err := f.q.Wait(ctx, jobs[0].ID)
		done <- waited{j, err}
	}()
	select {
	case w := <-done:
		t.Fatalf("Wait returned before the job ran: %v %v", w.j, w.err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, worker.Process(func(_ context.Context, j *job.Job) (any, error) {
		return map[string]any{"sum": 42}, nil
	}))
	w := <-done
	require.NoError(t, w.err)
	assert.Equal(t, job.Completed, w.j.Status)
	var res struct {
		Sum int `json:"sum"`
	}
	require.NoError(t, w.j.Result(&res))
	assert.Equal(t, 42, res.Sum, "the handler's result is readable from the waiting process")

	again, err := f.q.Wait(ctx, jobs[0].ID)
	require.NoError(t, err, "a finished job returns at once")
	assert.Equal(t, job.Completed, again.Status)
}

func TestWaitEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	j := f.add(t, 1)[0]

	_, err := f.q.Wait(testContext(t), "not-an-id")
	assert.ErrorIs(t, err, job.ErrInvalidID)
	_, err = f.q.Wait(testContext(t), job.UniqueID("never added"))
	assert.ErrorIs(t, err, job.ErrNotFound)
	var noResult struct{}
	assert.ErrorIs(t, j.Result(&noResult), job.ErrNoResult)

	short, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	_, err = f.q.Wait(short, j.ID)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	cancelled := make(chan error, 1)
	go func() {
		_, err := f.q.Wait(testContext(t), j.ID)
		cancelled <- err
	}()
	go func() {
		time.Sleep(200 * time.Millisecond) // let Wait subscribe; either order must work
		_, _ = f.q.CancelJob(testContext(t), "gone", j.ID)
	}()
	select {
	case err := <-cancelled:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Wait did not return on cancel")
	}

	other := f.add(t, 1)[0]
	stopped := make(chan error, 1)
	go func() {
		_, err := f.q.Wait(testContext(t), other.ID)
		stopped <- err
	}()
	time.Sleep(100 * time.Millisecond) // either order must work
	require.NoError(t, f.q.Stop(testContext(t)))
	select {
	case err := <-stopped:
		assert.ErrorIs(t, err, queue.ErrStopped)
	case <-time.After(15 * time.Second):
		t.Fatal("Wait did not end on Stop")
	}
}
