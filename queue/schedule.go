package queue

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Schedule is a cron schedule of a queue, as Schedules lists it.
type Schedule struct {
	// Name identifies the schedule in its queue; its jobs are named after it.
	Name string `json:"name"`
	// Spec is the cron spec as given to Queue.Schedule.
	Spec string `json:"spec"`
	// Next is the next time a job is due to be enqueued (UTC).
	Next time.Time `json:"next"`
}

// ErrInvalidSchedule is wrapped by the error of Schedule given an empty name or a spec
// that does not parse.
var ErrInvalidSchedule = invalid("queue: invalid schedule")

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
	return publicErr(q.e.Schedule(ctx, name, spec, data, opts))
}

// Unschedule removes the schedule name; jobs it enqueued stay. It returns an error
// wrapping job.ErrNotFound when there is no such schedule.
func (q *Queue) Unschedule(ctx context.Context, name string) error {
	return publicErr(q.e.Unschedule(ctx, name))
}

// Schedules lists the queue's schedules, by name.
func (q *Queue) Schedules(ctx context.Context) ([]Schedule, error) {
	docs, err := q.e.Schedules(ctx)
	if err != nil {
		return nil, publicErr(err)
	}
	out := make([]Schedule, len(docs))
	for i, d := range docs {
		out[i] = Schedule{Name: d.Name, Spec: d.Spec, Next: d.Next.UTC()}
	}
	return out, nil
}
