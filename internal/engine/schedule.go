package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/payload"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// Schedule is queue.Queue.Schedule, whose doc says what it does.
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
	// Stored by the same names as a job's payload: the jobs it makes copy it as stored.
	data, err = payload.Encode(data)
	if err != nil {
		return fmt.Errorf("%w %q: payload: %w: %w", ErrInvalidSchedule, name, job.ErrInvalidData, err)
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
	if err := q.onSide(ctx, rdb.SchedulesSuffix, func() error { return q.db.PutSchedule(ctx, stored) }); err != nil {
		return fmt.Errorf("queue %s: schedule %q: %w", q.cfg.Name, name, err)
	}
	return nil
}

// Unschedule is queue.Queue.Unschedule, whose doc says what it does.
func (q *Queue) Unschedule(ctx context.Context, name string) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	var found bool
	err = q.onSide(ctx, rdb.SchedulesSuffix, func() (err error) {
		found, err = q.db.DeleteSchedule(ctx, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue %s: unschedule %q: %w", q.cfg.Name, name, err)
	}
	if !found {
		return fmt.Errorf("queue %s: unschedule %q: %w", q.cfg.Name, name, job.ErrNotFound)
	}
	return nil
}

// Schedules is queue.Queue.Schedules, whose doc says what it does.
func (q *Queue) Schedules(ctx context.Context) ([]rdb.StoredSchedule, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	var docs []rdb.StoredSchedule
	err = q.onSide(ctx, rdb.SchedulesSuffix, func() (err error) {
		docs, err = q.db.Schedules(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s: list schedules: %w", q.cfg.Name, err)
	}
	return docs, nil
}

// onSide runs f, a query of the side table suffix, and runs it again, up to four times,
// when twins of the table made its name ambiguous: queues that start together on a fresh
// database may each create the table (RethinkDB does not serialize tableCreate), and a
// query meets the twins until dbinit has merged them, which assertSide makes it do now.
func (q *Queue) onSide(ctx context.Context, suffix string, f func() error) error {
	for try := 0; ; try++ {
		err := f()
		if err == nil || try == 4 || !strings.Contains(err.Error(), "ambiguous") {
			return err
		}
		if err := q.assertSide(ctx, suffix); err != nil {
			return err
		}
	}
}

// assertSide creates the side table of the queue with the given suffix if it is missing.
func (q *Queue) assertSide(ctx context.Context, suffix string) error {
	err := dbinit.Assert(ctx, dbinit.Target{
		Session: q.session, DB: q.cfg.DB, Table: q.cfg.Name + suffix, RunOpts: q.cfg.RunOpts, NoIndexes: true,
		Beside: q.cfg.Name,
	})
	if err != nil {
		return fmt.Errorf("queue %s: create the table %s: %w", q.cfg.Name, q.cfg.Name+suffix, err)
	}
	return nil
}
