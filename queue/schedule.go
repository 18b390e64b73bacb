package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// Schedule is a cron schedule of a queue, as Schedules lists it.
type Schedule struct {
	// Name identifies the schedule in its queue; its jobs are named after it.
	Name string
	// Spec is the cron spec as given to Queue.Schedule.
	Spec string
	// Next is the next time a job is due to be enqueued.
	Next time.Time
}

// ErrInvalidSchedule is wrapped by the error of Schedule given an empty name or a spec
// that does not parse.
var ErrInvalidSchedule = fmt.Errorf("%w schedule", job.ErrInvalid)

// Schedule adds (or replaces) the cron schedule name: at each time spec gives, a Queue
// Master of the table enqueues a job with payload data and options opts (nil: the
// queue's job options) named name. spec has five fields (minute hour day-of-month month
// day-of-week), or a descriptor such as "@hourly", optionally prefixed by
// "CRON_TZ=Europe/Paris " for a time zone other than UTC.
//
// Each fire time is enqueued exactly once however many masters run: its job's id is made
// from the schedule's name and the fire time. A fire time missed while no master ran
// is enqueued when one runs again (once, however many were missed). Schedules live in the
// table "<queue>_schedules", which the Node.js library ignores; the jobs they enqueue are
// ordinary jobs that Node.js workers process as any other.
func (q *Queue) Schedule(ctx context.Context, name, spec string, data any, opts *job.Options) error {
	if name == "" {
		return fmt.Errorf("%w: the name must not be empty", ErrInvalidSchedule)
	}
	sched, err := master.ParseSpec(spec)
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidSchedule, spec, err)
	}
	o := q.JobOptions()
	if opts != nil {
		o = opts.WithDefaults()
	}
	o.Name = name
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidSchedule, name, err)
	}
	if !o.DateEnable.IsZero() {
		return fmt.Errorf("%w %q: job options must not set DateEnable: the schedule sets it", ErrInvalidSchedule, name)
	}
	if err := job.CheckValue(data); err != nil {
		return fmt.Errorf("%w %q: payload: %w", ErrInvalidSchedule, name, err)
	}
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	if err := q.assertSide(ctx, rdb.SchedulesSuffix); err != nil {
		return err
	}
	stored := rdb.StoredSchedule{Name: name, Spec: spec, Data: data, Options: rdb.ScheduleOptions(o), Next: sched.Next(time.Now())}
	if err := q.db.PutSchedule(ctx, stored); err != nil {
		return fmt.Errorf("queue %s: schedule %q: %w", q.cfg.name, name, err)
	}
	return nil
}

// Unschedule removes the schedule name; jobs it enqueued stay. It returns an error
// wrapping job.ErrNotFound when there is no such schedule.
func (q *Queue) Unschedule(ctx context.Context, name string) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	found, err := q.db.DeleteSchedule(ctx, name)
	if err != nil {
		return fmt.Errorf("queue %s: unschedule %q: %w", q.cfg.name, name, err)
	}
	if !found {
		return fmt.Errorf("queue %s: unschedule %q: %w", q.cfg.name, name, job.ErrNotFound)
	}
	return nil
}

// Schedules lists the queue's schedules, by name.
func (q *Queue) Schedules(ctx context.Context) ([]Schedule, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	docs, err := q.db.Schedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue %s: list schedules: %w", q.cfg.name, err)
	}
	out := make([]Schedule, len(docs))
	for i, d := range docs {
		out[i] = Schedule{Name: d.Name, Spec: d.Spec, Next: d.Next}
	}
	return out, nil
}

// assertSide creates the side table of the queue with the given suffix if it is missing.
func (q *Queue) assertSide(ctx context.Context, suffix string) error {
	err := dbinit.Assert(ctx, dbinit.Target{
		Session: q.session, DB: q.cfg.db, Table: q.cfg.name + suffix, RunOpts: q.cfg.runOpts, NoIndexes: true,
		Beside: q.cfg.name,
	})
	if err != nil {
		return fmt.Errorf("queue %s: create the table %s: %w", q.cfg.name, q.cfg.name+suffix, err)
	}
	return nil
}
