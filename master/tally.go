package master

import (
	"context"
	"log/slog"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// The tally of finished jobs (see rdb.Tally) advances in steps, each a count of the jobs
// that finished in a stretch of time through the index of finished jobs, sized so that a
// step counts a few thousand jobs: the first tally of a table of a million finished jobs
// takes a few hundred steps (2 minutes on RethinkDB 2.4.4 on two cores, 5 beside a
// worker processing at full speed), and a busy queue's tally a step every TallyEvery.
// Steps pause as slices of retention do, so that counting never starves processing.
//
// One Master counts at a time. Several that start together count the first step alike;
// the step's compare-and-set lets one add its counts, and the others end their pass
// there. A Master whose pass finds the tally moved by another within tallyHeld leaves it
// to that one, and takes over once it stops (a Master stopped or dead). When each Master
// counted every step and lost all but one compare-and-set, the server counted each step
// once per Master: measured on RethinkDB 2.4.4 on a table of 10⁶ finished jobs with a
// worker beside, four Masters' first tally took 3m34s of server CPU (with the worker's)
// against 2m10s for one, and held the worker to 0.65× of its rate alone.
const (
	// TallyEvery is how often a Queue Master brings the tally up to date.
	TallyEvery = 10 * time.Second
	// tallyMargin keeps the tally this far behind the clock: a job stamped a little in
	// the past by a client whose clock runs late still lands after the tally's time.
	tallyMargin = 5 * time.Second
	firstStep   = time.Hour
	maxStep     = 30 * 24 * time.Hour
	// A step aims at counting between these many jobs.
	stepLow, stepHigh = 2000, 20000
	// A pass that starts further behind than catchUp (a first tally of a table filled
	// before any Master ran, or a Master back after a long stop) logs its progress every
	// tallyLogEvery, and when it is done.
	catchUp       = time.Hour
	tallyLogEvery = 10 * time.Second
	// tallyHeld is how long a tally another Master moved is left to it.
	tallyHeld = 3 * TallyEvery
)

// heldElsewhere tells whether another queue's Master moved the tally within tallyHeld,
// by the server's clock, and so is counting it.
func heldElsewhere(tl rdb.Tally, queueID string) bool {
	return tl.Found && tl.By != queueID && tl.Moved >= 0 && tl.Moved < tallyHeld
}

// AdvanceTally brings the tally of t's finished jobs up to tallyMargin before now,
// starting one if there is none and the table has reached t.TallyFrom jobs. Several
// masters may run it at once: each step is a compare-and-set, and one that lost to
// another master's ends its pass, as does one that finds the tally moved by another
// within tallyHeld: that one is counting it.
func AdvanceTally(ctx context.Context, t Target) error {
	tbl := t.table()
	tl, ok, err := tallyToAdvance(ctx, t, tbl)
	if err != nil || !ok {
		return err
	}
	if heldElsewhere(tl, t.QueueID) {
		return nil
	}
	step := firstStep
	// The target is fixed at the start: chasing the clock, the steps would never end.
	upTo := time.Now().Add(-tallyMargin).Truncate(time.Millisecond)
	p := tallyProgress{log: t.logger(), began: time.Now(), from: tl.AsOf, loud: upTo.Sub(tl.AsOf) > catchUp}
	for {
		if !tl.AsOf.Before(upTo) {
			p.done(tl)
			return nil
		}
		to := tl.AsOf.Add(step)
		if to.After(upTo) {
			to = upTo
		}
		start := time.Now()
		counts, err := tbl.CountFinished(ctx, tl.AsOf, to)
		if err != nil {
			return err
		}
		moved, err := tbl.AdvanceTally(ctx, tl.AsOf, to, counts)
		if err != nil {
			return err
		}
		if !moved {
			// Another Master counted the same step first, and goes on counting.
			return nil
		}
		// Said once this Master counts: the others that began with it say nothing.
		p.start(upTo)
		n := 0
		for _, c := range counts {
			n += c
		}
		p.counted += n
		step = nextStep(step, n)
		if tl, err = tbl.ReadTally(ctx); err != nil {
			return err
		}
		p.step(tl)
		select {
		case <-time.After(max(pauseRatio*time.Since(start), minPause)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tallyToAdvance reads the tally of tbl (t's table), starting one if there is none and
// the table has reached t.TallyFrom jobs: from its first finished job, or from
// tallyMargin before now when none has finished. ok is false, with no error, when there
// is no tally and the table is still too small for one.
func tallyToAdvance(ctx context.Context, t Target, tbl *rdb.Table) (tl rdb.Tally, ok bool, err error) {
	if tl, err = tbl.ReadTally(ctx); err != nil || tl.Found {
		return tl, err == nil, err
	}
	if t.TallyFrom > 0 {
		if size, err := tbl.EstimatedSize(ctx); err != nil || size < t.TallyFrom {
			return tl, false, err
		}
	}
	if err := t.assertStats(ctx); err != nil {
		return tl, false, err
	}
	first, err := tbl.FirstFinished(ctx)
	if err != nil {
		return tl, false, err
	}
	if first.IsZero() {
		first = time.Now().Add(-tallyMargin)
	}
	if err := tbl.StartTally(ctx, first); err != nil {
		return tl, false, err
	}
	if tl, err = tbl.ReadTally(ctx); err != nil {
		return tl, false, err
	}
	return tl, true, nil
}

// nextStep sizes the step after one of step that counted n jobs: halved (down to a
// second) above stepHigh, doubled (up to maxStep) below stepLow.
func nextStep(step time.Duration, n int) time.Duration {
	switch {
	case n > stepHigh:
		return max(step/2, time.Second)
	case n < stepLow:
		return min(step*2, maxStep)
	}
	return step
}

// tallyProgress logs a long tally pass: where it starts, how far it has counted every
// tallyLogEvery, and its end. Short passes (loud false) log nothing.
type tallyProgress struct {
	log         *slog.Logger
	loud        bool
	began, last time.Time
	from        time.Time
	counted     int
	started     bool
}

func (p *tallyProgress) start(upTo time.Time) {
	if p.loud && !p.started {
		p.started = true
		p.last = time.Now()
		p.log.Info("Queue Master: counting finished jobs for the tally, in slices (Summary reports them as estimates until it is done)",
			"from", p.from.UTC(), "to", upTo.UTC())
	}
}

func (p *tallyProgress) step(tl rdb.Tally) {
	if p.loud && time.Since(p.last) >= tallyLogEvery {
		p.last = time.Now()
		p.log.Info("Queue Master: counting finished jobs for the tally", "counted", p.counted, "upTo", tl.AsOf.UTC())
	}
}

func (p *tallyProgress) done(tl rdb.Tally) {
	if p.loud {
		p.log.Info("Queue Master: tally of finished jobs up to date", "counted", p.counted, "asOf", tl.AsOf.UTC(),
			"completed", tl.Completed, "cancelled", tl.Cancelled, "terminated", tl.Terminated, "took", time.Since(p.began).Round(time.Millisecond))
	}
}
