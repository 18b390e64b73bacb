package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/rjqgo/rethinkdb-job-queue/internal/lifecycle"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Services are a Queue Master's background loops, all of one shape: each runs in the
// lifecycle.Service it is started in, ends with it, and reports each pass to Tick, which
// tests wait on instead of sleeping.
//
//   - review: the review (orphans, retention in slices, the State Document) every
//     Interval;
//   - tally: the tally of finished jobs that Summary reads, every TallyEvery;
//   - schedules: the due runs of the table's cron schedules and the jobs past their start
//     deadline (Expire), every second, and with
//     heartbeats on, a review as soon as a run's lease has passed (a worker died), so its
//     job is recovered within seconds rather than at the next Interval.
type Services struct {
	// Target is the table and its reviewer; Ready waits until the table exists.
	Target Target
	Ready  func(ctx context.Context) error
	// Interval is the review's period; Heartbeat the queue's heartbeat period (zero or
	// less: no lease checks).
	Interval, Heartbeat time.Duration
	// Review runs the queue's review (which raises its events); remove tells whether it
	// removes finished jobs (a review for an expired lease does not).
	Review func(ctx context.Context, remove bool) error
	// Enqueue adds one scheduled run; a run already there (job.ErrExists) is not an error.
	Enqueue func(ctx context.Context, j *job.Job) error
	// Expire, when set, cancels the jobs whose start deadline has passed; the schedules
	// loop runs it every ScheduleTick, so such a job is cancelled within about a second.
	Expire func(ctx context.Context) error
	// Tick, when set, is called after each pass of a loop, with the loop's name
	// ("review", "tally", "schedules") and what the pass returned.
	Tick func(loop string, err error)
}

// ScheduleTick is how often the schedules loop looks for due runs: the lateness of a
// scheduled job at most, for one small read of the schedules table.
const ScheduleTick = time.Second

// Start starts the loops in svc.
func (s Services) Start(svc *lifecycle.Service) {
	svc.Go(func(ctx context.Context) {
		s.every(ctx, "review", s.Interval, false, func(ctx context.Context) error { return s.Review(ctx, true) })
	})
	svc.Go(func(ctx context.Context) {
		s.every(ctx, "tally", TallyEvery, true, func(ctx context.Context) error { return AdvanceTally(ctx, s.Target) })
	})
	var lastLeaseCheck time.Time
	svc.Go(func(ctx context.Context) {
		s.every(ctx, "schedules", ScheduleTick, false, func(ctx context.Context) error {
			err := FireDue(ctx, s.Target, s.Enqueue)
			if s.Expire != nil {
				err = errors.Join(err, s.Expire(ctx))
			}
			if s.Heartbeat > 0 && time.Since(lastLeaseCheck) >= s.Heartbeat/4 {
				lastLeaseCheck = time.Now()
				err = errors.Join(err, s.reviewExpired(ctx))
			}
			return err
		})
	})
}

// every runs pass every period once the table is ready (at once too when now is set)
// until ctx ends. A pass still running when the next is due delays it: passes never
// overlap.
func (s Services) every(ctx context.Context, loop string, period time.Duration, now bool, pass func(context.Context) error) {
	if s.Ready(ctx) != nil {
		return
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for first := true; ; first = false {
		if !first || now {
			err := pass(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.Target.logger().Warn("Queue Master: "+loop+" failed", "err", err)
			}
			if s.Tick != nil {
				s.Tick(loop, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// reviewExpired runs a review when an active job's lease has passed.
func (s Services) reviewExpired(ctx context.Context) error {
	expired, err := s.Target.table().ExpiredLeases(ctx)
	if err != nil || !expired {
		return err
	}
	return s.Review(ctx, false)
}

// specParser reads standard five-field cron specs, with an optional "CRON_TZ=Zone "
// prefix, and the descriptors such as @hourly.
var specParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec reads a schedule's cron spec (see queue.Queue.Schedule).
func ParseSpec(spec string) (cron.Schedule, error) { return specParser.Parse(spec) }

// FireDue enqueues one job for each schedule whose next time has come, then moves the
// schedule on to its following time. The job's id comes from the schedule's name and
// fire time, so masters that fire the same run at once add it once; the move is a
// compare-and-set on the fire time, so no run is skipped or moved twice.
func FireDue(ctx context.Context, t Target, enqueue func(context.Context, *job.Job) error) error {
	tbl := t.table()
	due, err := tbl.DueSchedules(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range due {
		sched, err := ParseSpec(s.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %q: %w", s.Name, err))
			continue
		}
		j := job.New(s.Data, s.JobOptions())
		j.ID = job.UniqueID("rjq-schedule/" + s.Name + "/" + s.Next.UTC().Format(time.RFC3339Nano))
		if err := enqueue(ctx, j); err != nil && !errors.Is(err, job.ErrExists) {
			errs = append(errs, fmt.Errorf("schedule %q: enqueue the run of %s: %w", s.Name, s.Next.Format(time.RFC3339), err))
			continue
		}
		if err := tbl.MoveSchedule(ctx, s.Name, s.Next, sched.Next(time.Now())); err != nil {
			errs = append(errs, fmt.Errorf("schedule %q: move on: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}
