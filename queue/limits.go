package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/window"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Limit holds back the jobs of one name, across every worker of the queue's table: a rate
// limit (at most Starts starts per Per) and a daily time window. Limits are kept in the
// table "<queue>_limits"; the rate is a token bucket in the database that workers take
// from atomically as they claim. A Node.js worker does not know limits and starts such
// jobs whenever it claims them.
type Limit struct {
	// Starts and Per: at most Starts starts per Per, spread as a bucket of Starts tokens
	// that refills over Per. Zero Starts: no rate limit.
	Starts int
	Per    time.Duration
	// Window, when set, lets the jobs start only within it; they wait, due, outside it.
	Window *Window
}

// Window is a daily time window: From and To are clock times ("09:00", "17:30") in
// Location (an IANA zone such as "Europe/Paris"; UTC when empty). A window whose To comes
// before its From spans midnight ("22:00" to "06:00"). A job that started inside the
// window runs to its end.
type Window struct {
	From, To string
	Location string
}

// ErrInvalidLimit is wrapped by the error of SetLimit given an empty name, a negative or
// half-given rate, or a window that does not parse.
var ErrInvalidLimit = fmt.Errorf("%w limit", job.ErrInvalid)

// limitsRefresh is how often a processing queue reads the limits again: how long a limit
// set by another process takes to apply here, for one small read.
const limitsRefresh = 5 * time.Second

// SetLimit sets (or replaces) the limit of the jobs named name; a new rate limit starts
// with a full bucket. Processing queues of other processes apply it within five seconds.
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
	stored := rdb.StoredLimit{Name: name, Starts: l.Starts, Per: float64(l.Per.Milliseconds())}
	if l.Window != nil {
		stored.From, stored.To, stored.Location = l.Window.From, l.Window.To, l.Window.Location
	}
	if err := q.db.PutLimit(ctx, stored); err != nil {
		return fmt.Errorf("queue %s: set the limit of %q: %w", q.cfg.name, name, err)
	}
	if p := q.processor(); p != nil {
		p.LimitsChanged()
	}
	return nil
}

// RemoveLimit removes the limit of the jobs named name. It returns an error wrapping
// job.ErrNotFound when there is none.
func (q *Queue) RemoveLimit(ctx context.Context, name string) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	found, err := q.db.DeleteLimit(ctx, name)
	if err != nil {
		return fmt.Errorf("queue %s: remove the limit of %q: %w", q.cfg.name, name, err)
	}
	if !found {
		return fmt.Errorf("queue %s: remove the limit of %q: %w", q.cfg.name, name, job.ErrNotFound)
	}
	if p := q.processor(); p != nil {
		p.LimitsChanged()
	}
	return nil
}

// Limits returns the limits of the queue's table, by job name. A stored limit that cannot
// be read (written by hand, say) is left out and logged; processing queues ignore it too.
func (q *Queue) Limits(ctx context.Context) (map[string]Limit, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	stored, bad, err := q.db.Limits(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue %s: list limits: %w", q.cfg.name, err)
	}
	for _, err := range bad {
		q.log.Warn("a stored limit cannot be read and is ignored", "err", err)
	}
	out := make(map[string]Limit, len(stored))
	for _, s := range stored {
		out[s.Name] = limitOf(s)
	}
	return out, nil
}

// limitings reads the table's limits as the processor applies them. A limit that cannot
// be read or is not valid (written by hand) is ignored and logged.
func (q *Queue) limitings(ctx context.Context) (map[string]processor.Limiting, error) {
	stored, bad, err := q.db.Limits(ctx)
	if err != nil {
		return nil, err
	}
	for _, err := range bad {
		q.log.Warn("a stored limit cannot be read and is ignored", "err", err)
	}
	out := make(map[string]processor.Limiting, len(stored))
	for _, s := range stored {
		parsed, err := parseLimit(s.Name, limitOf(s))
		if err != nil {
			q.log.Warn("a stored limit is not valid and is ignored", "name", s.Name, "err", err)
			continue
		}
		l := processor.Limiting{Starts: parsed.starts}
		if w := parsed.window; w != nil {
			l.Window = w.At
		}
		out[s.Name] = l
	}
	return out, nil
}

func limitOf(s rdb.StoredLimit) Limit {
	l := Limit{Starts: s.Starts, Per: time.Duration(s.Per * float64(time.Millisecond))}
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
		return limit{}, fmt.Errorf("%w of %q: "+format, append([]any{ErrInvalidLimit, name}, args...)...)
	}
	switch {
	case name == "":
		return bad("the job name must not be empty")
	case l.Starts < 0 || l.Per < 0:
		return bad("Starts and Per must not be negative")
	case (l.Starts > 0) != (l.Per > 0):
		return bad("give both Starts and Per, or neither")
	case l.Starts == 0 && l.Window == nil:
		return bad("give a rate (Starts per Per), a Window, or both")
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
