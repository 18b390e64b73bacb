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

// quiet is how long a test watches for something that must not happen.
const quiet = 300 * time.Millisecond

func TestPauseWaitsForRunningJobsAndResumeRestarts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	events := f.q.Events(ctx)
	first := f.add(t, 1)[0]
	release := make(chan struct{})
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.ID == first.ID {
			<-release
		}
		return nil, nil
	}))
	waitFor(t, events, queue.EventProcessing, first.ID)

	paused := make(chan error, 1)
	go func() { paused <- f.q.Pause(ctx, false) }()
	e := waitFor(t, events, queue.EventPausing, "")
	assert.False(t, e.Global)
	assert.True(t, f.q.Paused())
	select {
	case <-paused:
		t.Fatal("Pause returned while a job was running")
	case <-time.After(quiet):
	}
	close(release)
	require.NoError(t, <-paused)
	waitFor(t, events, queue.EventPaused, "")
	assert.Equal(t, job.Completed, f.get(t, first.ID).Status)

	second := f.add(t, 1)[0]
	time.Sleep(quiet) // nothing to wait on: a paused queue claims nothing
	assert.Equal(t, job.Waiting, f.get(t, second.ID).Status, "a paused queue claims nothing")

	require.NoError(t, f.q.Resume(ctx, false))
	waitFor(t, events, queue.EventResumed, "")
	assert.False(t, f.q.Paused())
	waitFor(t, events, queue.EventCompleted, second.ID)
}

func TestPauseHonoursContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	j := f.add(t, 1)[0]
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		<-release
		return nil, nil
	}))
	waitFor(t, events, queue.EventProcessing, j.ID)
	short, cancel := context.WithTimeout(testContext(t), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, f.q.Pause(short, false), context.DeadlineExceeded)
	assert.True(t, f.q.Paused(), "the queue stays paused")
}

func TestGlobalPauseWritesTheStateDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	require.NoError(t, f.q.Pause(ctx, true))
	doc := f.rawDoc(t, job.StateDocumentID)
	assert.Equal(t, "paused", doc["state"])
	assert.Equal(t, f.q.ID(), doc["queueId"])
	within(t, time.Now(), doc["dateChange"].(time.Time), 5*time.Second)
	require.NoError(t, f.q.Resume(ctx, true))
	assert.Equal(t, "active", f.rawDoc(t, job.StateDocumentID)["state"])
	s, err := f.q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, s.Total, "the State Document is not a job")
}
