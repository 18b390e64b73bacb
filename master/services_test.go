package master_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// The Master's loops run on their periods in the service they were started in, report
// each pass to Tick, fire a due schedule once and move it on, and end with the service.
func TestServicesRunTheirLoopsUntilStopped(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tgt := f.target(master.Retention{Keep: true})
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: f.session, DB: f.db, Table: "jobs" + rdb.SchedulesSuffix, NoIndexes: true}))
	tbl := &rdb.Table{Session: f.session, DB: f.db, Name: "jobs", QueueID: "master:q"}
	due := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	require.NoError(t, tbl.PutSchedule(ctx, rdb.StoredSchedule{Name: "hourly", Spec: "@hourly", Next: due}))

	var mu sync.Mutex
	ticks := map[string]int{}
	var reviews []bool
	var enqueued []*job.Job
	tick := make(chan string, 100)
	var errs []error
	svc := lifecycle.New()
	// Stopped however the test ends, so that no loop outlives it.
	defer func() { svc.Cancel(nil); _ = svc.Wait(ctx) }()
	master.Services{
		Target:   tgt,
		Ready:    func(context.Context) error { return nil },
		Interval: 20 * time.Millisecond,
		Review: func(_ context.Context, remove bool) error {
			mu.Lock()
			defer mu.Unlock()
			reviews = append(reviews, remove)
			return nil
		},
		Enqueue: func(_ context.Context, j *job.Job) error {
			mu.Lock()
			defer mu.Unlock()
			enqueued = append(enqueued, j)
			return nil
		},
		Tick: func(loop string, err error) {
			mu.Lock()
			ticks[loop]++
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", loop, err))
			}
			mu.Unlock()
			select {
			case tick <- loop:
			default:
			}
		},
	}.Start(svc)

	seen := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for !(seen["review"] && seen["tally"] && seen["schedules"]) {
		select {
		case loop := <-tick:
			seen[loop] = true
		case <-deadline:
			t.Fatalf("loops that never ran a pass: %v", seen)
		}
	}
	svc.Cancel(nil)
	require.NoError(t, svc.Wait(ctx))

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, errs, "passes that failed")
	for _, remove := range reviews {
		assert.True(t, remove, "the periodic review removes finished jobs")
	}
	require.Len(t, enqueued, 1, "the due run enqueued once")
	assert.Equal(t, "hourly", enqueued[0].Name)
	assert.Equal(t, job.UniqueID("rjq-schedule/hourly/"+due.Format(time.RFC3339Nano)), enqueued[0].ID)
	s, err := tbl.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, s, 1)
	assert.True(t, s[0].Next.After(time.Now()), "the schedule moved on to its next run: %v", s[0].Next)
}
