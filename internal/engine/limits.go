package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/window"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Limit and Window are queue.Limit and queue.Window, whose docs say what they mean.
type Limit struct {
	Starts  int
	Per     time.Duration
	Window  *Window
	Running int
}

// Window: see Limit.
type Window struct {
	From, To, Location string
}

// SetLimit is queue.Queue.SetLimit, whose doc says what it does.
func (q *Queue) SetLimit(ctx context.Context, name string, l Limit) error {
	if _, err := parseLimit(name, l); err != nil {
		return err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	if err := q.assertSide(ctx, rdb.LimitsSuffix); err != nil {
		return err
	}
	if l.Running > 0 {
		if err := q.assertSide(ctx, rdb.SlotsSuffix); err != nil {
			return err
		}
	}
	stored := rdb.StoredLimit{Name: name, Starts: l.Starts, Per: float64(l.Per.Milliseconds()), Running: l.Running}
	if l.Window != nil {
		stored.From, stored.To, stored.Location = l.Window.From, l.Window.To, l.Window.Location
	}
	if err := q.onSide(ctx, rdb.LimitsSuffix, func() error { return q.db.PutLimit(ctx, stored) }); err != nil {
		return fmt.Errorf("queue %s: set the limit of %s: %w", q.cfg.Name, errtext.Key(name), err)
	}
	if p := q.processor(); p != nil {
		p.LimitsChanged()
	}
	return nil
}

// RemoveLimit is queue.Queue.RemoveLimit, whose doc says what it does.
func (q *Queue) RemoveLimit(ctx context.Context, name string) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	var found bool
	err = q.onSide(ctx, rdb.LimitsSuffix, func() (err error) {
		found, err = q.db.DeleteLimit(ctx, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue %s: remove the limit of %s: %w", q.cfg.Name, errtext.Key(name), err)
	}
	if !found {
		return fmt.Errorf("queue %s: remove the limit of %s: %w", q.cfg.Name, errtext.Key(name), job.ErrNotFound)
	}
	if p := q.processor(); p != nil {
		p.LimitsChanged()
	}
	return nil
}

// Limits is queue.Queue.Limits, whose doc says what it does.
func (q *Queue) Limits(ctx context.Context) (map[string]Limit, error) {
	set, err := q.readLimits(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Limit, len(set.Names))
	for _, s := range set.Names {
		out[s.Name] = limitOf(s)
	}
	return out, nil
}

// limitings makes the table's limits what the processor applies. A limit that cannot be
// read or is not valid (written by hand) is ignored and logged.
func (q *Queue) limitings(set rdb.LimitSet) processor.Limitings {
	q.warnBadLimits(set)
	out := make(map[string]processor.Limiting, len(set.Names))
	for _, s := range set.Names {
		parsed, err := parseLimit(s.Name, limitOf(s))
		if err != nil {
			q.log.Warn("a stored limit is not valid and is ignored", "name", s.Name, "err", err)
			continue
		}
		l := processor.Limiting{Starts: parsed.starts, Running: s.Running}
		if w := parsed.window; w != nil {
			l.Window = w.At
		}
		out[s.Name] = l
	}
	return processor.Limitings{Names: out, Groups: set.Groups, GroupRates: groupRates(set.GroupRates)}
}

// groupRates are the stored rates of groups as the processor applies them.
func groupRates(stored map[string]rdb.GroupRate) map[string]processor.Rate {
	out := make(map[string]processor.Rate, len(stored))
	for g, r := range stored {
		out[g] = processor.Rate{Starts: r.Starts, Per: time.Duration(r.Per * float64(time.Millisecond))}
	}
	return out
}

// SetGroupRate is queue.Queue.SetGroupRate, whose doc says what it does.
func (q *Queue) SetGroupRate(ctx context.Context, group string, starts int, per time.Duration) error {
	if err := checkGroupRate(group, starts, per); err != nil {
		return err
	}
	return q.putGroupLimits(ctx, group, "rate", func() error {
		return q.db.PutGroupRate(ctx, group, starts, float64(per.Milliseconds()))
	})
}

// checkGroupRate checks the arguments of SetGroupRate.
func checkGroupRate(group string, starts int, per time.Duration) error {
	if err := checkGroupLimit(group, 0); err != nil {
		return err
	}
	switch {
	case starts < 0 || per < 0:
		return fmt.Errorf("%w of group %q: starts and per must not be negative", ErrInvalidLimit, group)
	case (starts > 0) != (per > 0):
		return fmt.Errorf("%w of group %q: give both starts and per, or neither (no rate)", ErrInvalidLimit, group)
	case per > 0 && per < time.Millisecond:
		return fmt.Errorf("%w of group %q: per must be at least a millisecond", ErrInvalidLimit, group)
	}
	return nil
}

// GroupRates is queue.Queue.GroupRates, whose doc says what it does.
func (q *Queue) GroupRates(ctx context.Context) (map[string]processor.Rate, error) {
	set, err := q.readLimits(ctx)
	if err != nil {
		return nil, err
	}
	return groupRates(set.GroupRates), nil
}

// warnBadLimits logs the documents of the limits table that are not limits (written by
// hand), which are ignored.
func (q *Queue) warnBadLimits(set rdb.LimitSet) {
	for _, err := range set.Bad {
		q.log.Warn("a stored limit cannot be read and is ignored", "err", err)
	}
}

func limitOf(s rdb.StoredLimit) Limit {
	l := Limit{Starts: s.Starts, Per: time.Duration(s.Per * float64(time.Millisecond)), Running: s.Running}
	if s.From != "" || s.To != "" {
		l.Window = &Window{From: s.From, To: s.To, Location: s.Location}
	}
	return l
}

// limit is a Limit checked and parsed, as the processor applies it.
type limit struct {
	starts int
	window *window.Window
}

// parseLimit checks l, the limit of the jobs named name.
func parseLimit(name string, l Limit) (limit, error) {
	bad := func(format string, args ...any) (limit, error) {
		return limit{}, fmt.Errorf("%w of %s: "+format, append([]any{ErrInvalidLimit, errtext.Key(name)}, args...)...)
	}
	switch {
	case name == "":
		return bad("the job name must not be empty")
	case strings.HasPrefix(name, rdb.GroupLimitPrefix):
		return bad("a job name must not start with %q, which group limits use", rdb.GroupLimitPrefix)
	case l.Starts < 0 || l.Per < 0 || l.Running < 0:
		return bad("Starts, Per and Running must not be negative")
	case (l.Starts > 0) != (l.Per > 0):
		return bad("give both Starts and Per, or neither")
	case l.Starts == 0 && l.Window == nil && l.Running == 0:
		return bad("give a rate (Starts per Per), a Window, Running, or several")
	case l.Per > 0 && l.Per < time.Millisecond:
		return bad("Per must be at least a millisecond")
	}
	out := limit{starts: l.Starts}
	if w := l.Window; w != nil {
		parsed, err := window.Parse(w.From, w.To, w.Location)
		if err != nil {
			return bad("window: %v", err)
		}
		out.window = &parsed
	}
	return out, nil
}

// SetGroupLimit is queue.Queue.SetGroupLimit, whose doc says what it does.
func (q *Queue) SetGroupLimit(ctx context.Context, group string, running int) error {
	if err := checkGroupLimit(group, running); err != nil {
		return err
	}
	return q.putGroupLimits(ctx, group, "limit", func() error { return q.db.PutGroupLimit(ctx, group, running) })
}

// putGroupLimits writes a group's limits with put, the limit named what ("limit",
// "rate"), making the side tables they need, and tells the processor.
func (q *Queue) putGroupLimits(ctx context.Context, group, what string, put func() error) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	for _, side := range []string{rdb.LimitsSuffix, rdb.SlotsSuffix} {
		if err := q.assertSide(ctx, side); err != nil {
			return err
		}
	}
	if err := q.onSide(ctx, rdb.LimitsSuffix, put); err != nil {
		return fmt.Errorf("queue %s: set the %s of group %s: %w", q.cfg.Name, what, errtext.Key(group), err)
	}
	if p := q.processor(); p != nil {
		p.LimitsChanged()
	}
	return nil
}

// checkGroupLimit checks the arguments of SetGroupLimit.
func checkGroupLimit(group string, running int) error {
	if group != "" {
		if err := job.New(nil, job.DefaultOptions()).SetGroup(group).Err(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidLimit, err) // err quotes the group
		}
	}
	if running < 0 {
		return fmt.Errorf("%w of group %s: running must not be negative (0: no limit of its own)", ErrInvalidLimit, errtext.Key(group))
	}
	return nil
}

// GroupLimits is queue.Queue.GroupLimits, whose doc says what it does.
func (q *Queue) GroupLimits(ctx context.Context) (map[string]int, error) {
	set, err := q.readLimits(ctx)
	if err != nil {
		return nil, err
	}
	if set.Groups == nil {
		return map[string]int{}, nil
	}
	return set.Groups, nil
}

// readLimits reads the stored limits, by name and by group, for Limits, GroupLimits and
// GroupRates; a document that cannot be read is logged and left out.
func (q *Queue) readLimits(ctx context.Context) (rdb.LimitSet, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return rdb.LimitSet{}, err
	}
	defer end()
	var set rdb.LimitSet
	err = q.onSide(ctx, rdb.LimitsSuffix, func() (err error) {
		set, err = q.db.Limits(ctx)
		return err
	})
	if err != nil {
		return rdb.LimitSet{}, fmt.Errorf("queue %s: list limits: %w", q.cfg.Name, err)
	}
	q.warnBadLimits(set)
	return set, nil
}

// maxGroupRead bounds the unfinished jobs GroupCounts reads: on RethinkDB 2.4.4, about
// 300 ms of the server for 20,000 (and a read of more than 100,000 at once would pass
// the server's array limit).
const maxGroupRead = 20000

// GroupCounts is queue.Queue.Groups' read of the jobs of each group (rdb.Table.GroupCounts).
func (q *Queue) GroupCounts(ctx context.Context) (map[string]rdb.GroupCount, bool, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer end()
	return q.db.GroupCounts(ctx, maxGroupRead)
}
