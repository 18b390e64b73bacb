package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestReviewReturnsCountsAndRaisesReviewed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{RemoveFinishedJobs: time.Hour})
	ctx := testContext(t)
	events := collect(t, f.q, queue.EventReviewed)
	jobs := f.add(t, 3)
	f.setRaw(t, jobs[0].ID, map[string]any{"status": "active", "dateEnable": time.Now().Add(-time.Minute)})
	f.setRaw(t, jobs[1].ID, map[string]any{"status": "completed", "dateFinished": time.Now().Add(-2 * time.Hour)})

	res, err := f.q.Review(ctx)
	require.NoError(t, err)
	assert.Equal(t, queue.ReviewResult{Reviewed: 1, Removed: 1, Local: true}, res)
	e := events(1)[0]
	require.NotNil(t, e.Review)
	assert.Equal(t, res, *e.Review)
	assert.True(t, e.Local)
	assert.Equal(t, job.Failed, f.get(t, jobs[0].ID).Status)
	assert.Nil(t, f.rawDoc(t, jobs[1].ID))
	assert.Equal(t, "reviewed", f.rawDoc(t, job.StateDocumentID)["state"])
}

func TestReviewKeepsFinishedJobsWhenAskedTo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{RemoveFinishedJobs: queue.KeepFinishedJobs})
	j := f.add(t, 1)[0]
	f.setRaw(t, j.ID, map[string]any{"status": "completed", "dateFinished": time.Now().AddDate(-5, 0, 0)})
	res, err := f.q.Review(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, 0, res.Removed)
	assert.NotNil(t, f.rawDoc(t, j.ID))
}

// A master with a short interval reviews on its own, and stops with its queue.
func TestMasterReviewsOnItsInterval(t *testing.T) {
	noLeaks(t)
	f := newFixture(t, &queue.Options{MasterInterval: 200 * time.Millisecond})
	events := collect(t, f.q, queue.EventReviewed)
	j := f.add(t, 1)[0]
	f.setRaw(t, j.ID, map[string]any{"status": "active", "dateEnable": time.Now().Add(-time.Minute), "retryMax": 0})
	start := time.Now()
	got := events(2)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	assert.Equal(t, 1, got[0].Review.Reviewed+got[1].Review.Reviewed, "the orphan is reviewed once")
	assert.Equal(t, job.Terminated, f.get(t, j.ID).Status)
	require.NoError(t, f.q.Stop(testContext(t)))
}

// A worker dies mid-job: its job stays active. Once its dateEnable passes, the next review
// fails it and another worker runs it again.
func TestJobOfADeadWorkerRunsAgainAfterReview(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	j := f.q.CreateJob("work").SetTimeout(time.Second).SetRetryMax(2).SetRetryDelay(0)
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)

	dying := newQueue(t, f, &queue.Options{MasterInterval: -1})
	started := make(chan struct{})
	dead := make(chan struct{})
	require.NoError(t, dying.Process(func(ctx context.Context, j *job.Job) (any, error) {
		close(started)
		<-ctx.Done()
		<-dead // a handler still running when its process dies
		return nil, errors.New("never recorded")
	}))
	<-started
	// Kill it: the handler is cut off, it does not return before Stop does (which would
	// hand its job back), and nothing about the job is written.
	cut, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, dying.Stop(cut), context.Canceled)
	close(dead)
	assert.Equal(t, "active", f.rawDoc(t, j.ID)["status"])

	ran := make(chan *job.Job, 1)
	survivor := newQueue(t, f, &queue.Options{MasterInterval: 300 * time.Millisecond})
	require.NoError(t, survivor.Process(func(ctx context.Context, j *job.Job) (any, error) {
		ran <- j
		return "second time lucky", nil
	}))
	select {
	case again := <-ran:
		assert.Equal(t, j.ID, again.ID)
		assert.Equal(t, 2, again.ProcessCount)
		assert.Equal(t, 1, again.RetryCount)
	case <-time.After(20 * time.Second):
		t.Fatal("the dead worker's job was never run again")
	}
	require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Completed }, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, messages(f.get(t, j.ID).Log), master.MessageOrphan)
}

// A worker reviews the table before it starts processing, to recover orphans, but leaves
// removing finished jobs to the Queue Masters: a pass over a big table would hold up its
// first job.
func TestAWorkersFirstReviewRemovesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1, RemoveFinishedJobs: time.Hour})
	reviewed := collect(t, f.q, queue.EventReviewed)
	j := f.add(t, 1)[0]
	f.setRaw(t, j.ID, map[string]any{"status": "completed", "dateFinished": time.Now().Add(-2 * time.Hour)})
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	e := reviewed(1)[0]
	require.NotNil(t, e.Review)
	assert.Zero(t, e.Review.Removed)
	assert.NotNil(t, f.rawDoc(t, j.ID), "the old finished job stays")

	res, err := f.q.Review(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Removed, "Review, asked for, removes it")
}
