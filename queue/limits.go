package queue

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/window"
)

// Limit holds back the jobs of one name, across every worker of the queue's table: a rate
// limit (at most Starts starts per Per), a daily time window and a running cap. Limits are
// kept in the table "<queue>_limits"; the rate is a token bucket in the database that
// workers take from atomically as they claim, the cap's slots are in "<queue>_slots". A Node.js worker does not know limits and starts such
// jobs whenever it claims them.
type Limit struct {
	// Starts and Per: at most Starts starts per Per, spread as a bucket of Starts tokens
	// that refills over Per. Zero Starts: no rate limit.
	Starts int
	Per    time.Duration
	// Window, when set, lets the jobs start only within it; they wait, due, outside it.
	Window *Window
	// Running, when positive, caps the jobs of the name active at once across every
	// worker of the table: each run holds one of Running slots from its claim until its
	// outcome is written, or until its lease ends when its worker died (never less, so
	// the cap is never exceeded, and never for ever). Zero: no cap. A Node.js worker
	// knows nothing of it and runs such jobs outside the cap.
	Running int
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
// half-given rate, a negative Running, or a window that does not parse; and by that of
// SetGroupLimit given a group SetGroup refuses or a negative limit.
var ErrInvalidLimit = invalid("queue: invalid limit")

// SetLimit sets (or replaces) the limit of the jobs named name; a new rate limit starts
// with a full bucket. Processing queues of other processes apply it within five seconds.
func (q *Queue) SetLimit(ctx context.Context, name string, l Limit) error {
	return publicErr(q.e.SetLimit(ctx, name, engine.Limit{Starts: l.Starts, Per: l.Per, Window: (*engine.Window)(l.Window), Running: l.Running}))
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
		out[name] = Limit{Starts: l.Starts, Per: l.Per, Window: (*Window)(l.Window), Running: l.Running}
	}
	return out, nil
}

// limit is a Limit checked and parsed, as the processor applies it.
type limit struct {
	starts int
	window *window.Window
}

// SetGroupLimit sets the running limit of group (see job.SetGroup): at most running jobs
// of the group are active at once across every worker of the table. Group "" sets the
// default: the limit of every group without one of its own (jobs without a group are
// not limited by it). Running 0 removes the group's own limit: the group goes by the
// default again, as a group never given one; for "", it removes the default, and groups
// without their own are then not limited. (To exempt one group from the default, give
// it a limit it cannot reach, such as math.MaxInt32: its runs still take slots.) Each
// run holds a slot of its group from its claim until its outcome is written, or until
// its lease ends when its worker died: never less, so the limit is never exceeded, and
// never for ever. Processing queues of other processes apply a new limit within five
// seconds.
//
// A job of a group whose slots are all taken waits, and the jobs behind it go first. A
// Node.js worker knows nothing of groups and runs their jobs outside the limit.
func (q *Queue) SetGroupLimit(ctx context.Context, group string, running int) error {
	return publicErr(q.e.SetGroupLimit(ctx, group, running))
}

// GroupRate is a group's rate limit (SetGroupRate): at most Starts of its jobs start in
// any span of Per, across every worker of the table. Zero Starts: none.
type GroupRate struct {
	Starts int
	Per    time.Duration
}

// SetGroupRate sets the rate limit of group (see job.SetGroup), beside its running limit
// (SetGroupLimit): at most starts of its jobs start in any span of per, across every
// worker of the table, as BullMQ Pro's group rate limit does. Group "" sets the default
// of every group without a rate of its own, each group counting its own starts. Starts
// and per 0 remove the group's own rate, so that it goes by the default again (for "":
// remove the default). Processing queues of other processes apply a new rate within five
// seconds.
//
// The count is exact: a worker records each start in "<queue>_slots" in the same atomic
// write that takes the group's running slot, before it claims the job, and a start
// counts for per and one second more from then (the second covers the claim that follows
// and clocks that differ between machines), whether the run completes, fails or its
// worker dies; only a claim that loses its job to another worker gives its start back. A
// job held back by the rate waits, due, and the jobs behind it go first. A Node.js worker
// knows nothing of it.
func (q *Queue) SetGroupRate(ctx context.Context, group string, starts int, per time.Duration) error {
	return publicErr(q.e.SetGroupRate(ctx, group, starts, per))
}

// GroupRates returns the rate limits of groups set by SetGroupRate, by group ("" for the
// default): a group not in it goes by the default, and without a default it has no rate.
func (q *Queue) GroupRates(ctx context.Context) (map[string]GroupRate, error) {
	rates, err := q.e.GroupRates(ctx)
	if err != nil {
		return nil, publicErr(err)
	}
	out := make(map[string]GroupRate, len(rates))
	for g, r := range rates {
		out[g] = GroupRate{Starts: r.Starts, Per: r.Per}
	}
	return out, nil
}

// GroupLimits returns the running limits of groups set by SetGroupLimit, by group (""
// for the default), each positive: a group not in it goes by the default, and without a
// default it is not limited.
func (q *Queue) GroupLimits(ctx context.Context) (map[string]int, error) {
	groups, err := q.e.GroupLimits(ctx)
	return groups, publicErr(err)
}

// GroupStat is what Groups reports of one group of jobs (job.SetGroup).
type GroupStat struct {
	Group string
	// Limit is the group's running limit: its own (SetGroupLimit), else the default's;
	// 0: none. On the row of the default (Group ""), the default.
	Limit int
	// Rate is the group's rate limit: its own (SetGroupRate), else the default's. On the
	// row of the default (Group ""), the default.
	Rate GroupRate
	// Waiting counts its jobs to be claimed (waiting, or failed and to be retried); Active
	// those running.
	Waiting, Active int
}

// Groups returns, sorted by group, each group that has unfinished jobs or a limit of its
// own, with its running limit and how many of its jobs wait and run; and, first, when a
// default limit is set (SetGroupLimit with group ""), the default as the row of group "",
// whose Waiting and Active are 0 (jobs without a group are not limited by it), as rjq
// limits and the dashboard show it. It reads the group and status of the waiting, failed
// and active jobs, at most 20,000 of them (on RethinkDB 2.4.4, about 300 ms for 20,000):
// partial is true when there were more, and the counts are then of those read. It reads
// no finished job.
func (q *Queue) Groups(ctx context.Context) (groups []GroupStat, partial bool, err error) {
	limits, err := q.GroupLimits(ctx)
	if err != nil {
		return nil, false, err
	}
	rates, err := q.GroupRates(ctx)
	if err != nil {
		return nil, false, err
	}
	counts, partial, err := q.e.GroupCounts(ctx)
	if err != nil {
		return nil, false, publicErr(err)
	}
	return groupStats(limits, rates, counts), partial, nil
}

// groupStats joins the limits and rates by group ("" the default, a row of its own) and
// the counts of jobs by group.
func groupStats(limits map[string]int, rates map[string]GroupRate, counts map[string]rdb.GroupCount) []GroupStat {
	byGroup := make(map[string]GroupStat, len(limits)+len(counts))
	for g, c := range counts {
		if g != "" { // a group "" written by hand is no group, as for the workers
			byGroup[g] = GroupStat{Group: g, Waiting: c.Waiting, Active: c.Active}
		}
	}
	for _, own := range []map[string]bool{keysOf(limits), keysOf(rates)} {
		for g := range own {
			byGroup[g] = GroupStat{Group: g, Waiting: byGroup[g].Waiting, Active: byGroup[g].Active}
		}
	}
	out := make([]GroupStat, 0, len(byGroup))
	for g, s := range byGroup {
		s.Limit = ownOrDefault(limits, g)
		s.Rate = ownOrDefault(rates, g)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b GroupStat) int { return cmp.Compare(a.Group, b.Group) })
	return out
}

// keysOf is the set of m's keys.
func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// ownOrDefault is group g's own value in m, else the default's (key "").
func ownOrDefault[V any](m map[string]V, g string) V {
	if v, ok := m[g]; ok {
		return v
	}
	return m[""]
}
