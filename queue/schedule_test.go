package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestScheduleEnqueuesEachRunOnceAcrossMasters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	newQueue(t, f, nil) // a second master on the table
	ctx := testContext(t)
	require.NoError(t, f.q.Schedule(ctx, "tick", "@every 1s", map[string]any{"n": 1}, nil))
	scheds, err := f.q.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, scheds, 1)
	assert.Equal(t, "tick", scheds[0].Name)
	assert.Equal(t, "@every 1s", scheds[0].Spec)
	within(t, time.Now().Add(time.Second), scheds[0].Next, 2*time.Second)

	start := time.Now()
	require.Eventually(t, func() bool {
		jobs, err := f.q.FindJobByName(ctx, "tick")
		return err == nil && len(jobs) >= 3
	}, 15*time.Second, 100*time.Millisecond, "the schedule enqueues a job every second")
	jobs, err := f.q.FindJobByName(ctx, "tick")
	require.NoError(t, err)
	elapsed := time.Since(start)
	assert.LessOrEqual(t, len(jobs), int(elapsed/time.Second)+2, "two masters enqueue each run once, not twice")
	assert.Equal(t, map[string]any{"n": float64(1)}, jobs[0].Data)

	require.NoError(t, f.q.Unschedule(ctx, "tick"))
	scheds, err = f.q.Schedules(ctx)
	require.NoError(t, err)
	assert.Empty(t, scheds)
	assert.ErrorIs(t, f.q.Unschedule(ctx, "tick"), job.ErrNotFound)
}

func TestScheduleBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	for _, tc := range []struct {
		name, spec string
		data       any
		opts       *job.Options
	}{
		{"", "* * * * *", nil, nil},
		{"bad spec", "every minute", nil, nil},
		{"six fields", "0 * * * * *", nil, nil},
		{"bad zone", "CRON_TZ=Nowhere/Atlantis 0 * * * *", nil, nil},
		{"bad payload", "* * * * *", make(chan int), nil},
		{"bad options", "* * * * *", nil, &job.Options{Timeout: -1}},
	} {
		err := f.q.Schedule(ctx, tc.name, tc.spec, tc.data, tc.opts)
		assert.ErrorIs(t, err, job.ErrInvalid, "%+v", tc)
	}
	scheds, err := f.q.Schedules(ctx)
	require.NoError(t, err)
	assert.Empty(t, scheds, "nothing was written")
	require.NoError(t, f.q.Schedule(ctx, "paris", "CRON_TZ=Europe/Paris 30 6 * * 1-5", nil, nil))
}
