package queue

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/internal/window"
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
var ErrInvalidLimit = invalid("queue: invalid limit")

// SetLimit sets (or replaces) the limit of the jobs named name; a new rate limit starts
// with a full bucket. Processing queues of other processes apply it within five seconds.
func (q *Queue) SetLimit(ctx context.Context, name string, l Limit) error {
	return publicErr(q.e.SetLimit(ctx, name, engine.Limit{Starts: l.Starts, Per: l.Per, Window: (*engine.Window)(l.Window)}))
}

// RemoveLimit removes the limit of the jobs named name. It returns an error wrapping
// job.ErrNotFound when there is none.
func (q *Queue) RemoveLimit(ctx context.Context, name string) error {
	return publicErr(q.e.RemoveLimit(ctx, name))
}

// Limits returns the limits of the queue's table, by job name. A stored limit that cannot
// be read (written by hand, say) is left out and logged; processing queues ignore it too.
func (q *Queue) Limits(ctx context.Context) (map[string]Limit, error) {
	limits, err := q.e.Limits(ctx)
	if err != nil {
		return nil, publicErr(err)
	}
	out := make(map[string]Limit, len(limits))
	for name, l := range limits {
		out[name] = Limit{Starts: l.Starts, Per: l.Per, Window: (*Window)(l.Window)}
	}
	return out, nil
}

// limit is a Limit checked and parsed, as the processor applies it.
type limit struct {
	starts int
	window *window.Window
}
