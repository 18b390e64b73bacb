// Package bulk acts on every job that a filter selects, for the operator tools (rjq
// reanimate and remove with --status, and the dashboard's bulk actions). A queue may hold
// millions of finished jobs, so it never reads the selection whole: each slice reads at
// most a batch of ids through an index (never a table scan) and acts on them, and only
// the counts are kept.
package bulk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// MaxBatch bounds the ids of one slice: a getAll of a thousand keys is one modest query
// on any server, and the ids of one slice are all that is held in memory.
const MaxBatch = 1000

// Filter selects jobs: those of Status (and of Name, when set), Batch ids a slice (1 to
// MaxBatch; 0 means MaxBatch).
type Filter struct {
	Status, Name string
	Batch        int
}

// After each slice an action pauses PauseRatio times as long as the slice took (at
// least minPause), as the Queue Master's retention does, so that a bulk action over a
// hundred thousand jobs takes at most a seventh of one query stream of the server and
// never starves processing.
const (
	PauseRatio = 6
	minPause   = 10 * time.Millisecond
)

// pace waits after a slice that started at start, or until ctx ends.
func pace(ctx context.Context, start time.Time) error {
	select {
	case <-time.After(max(PauseRatio*time.Since(start), minPause)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f Filter) batch() int {
	if f.Batch < 1 || f.Batch > MaxBatch {
		return MaxBatch
	}
	return f.Batch
}

// ErrStatus is wrapped by the error of an action given a status it does not take.
var ErrStatus = fmt.Errorf("%w status for this action", job.ErrInvalid)

// Reanimate reanimates every failed or terminated job of f that ended before it began
// through reanimate (the
// queue's ReanimateJob, which writes the jobs as every queue expects them: log entry,
// events), a slice at a time through the status index, and calls progress after each
// slice with the count so far. Reanimated jobs leave the status, so each slice is read
// from the start of the key again; ReanimateJob changes nothing when one of the ids went
// meanwhile, so such a slice is read again.
//
// ReanimateJob takes no status guard: a failed job whose retry a worker claims between
// the read of its slice and the write is reanimated while it runs. Terminated jobs do not
// move on their own, so reanimating them is safe; for failed ones the window is one
// round trip.
func Reanimate(ctx context.Context, s r.QueryExecutor, table r.Term, f Filter, reanimate func(ctx context.Context, ids []string) ([]string, error), progress func(total int)) (int, error) {
	var start time.Time
	if st := job.Status(f.Status); st != job.Failed && st != job.Terminated {
		return 0, fmt.Errorf("%w: reanimate takes failed or terminated jobs, not %q", ErrStatus, f.Status)
	}
	// Only the jobs that ended before the walk began: a reanimated job that a worker runs
	// and fails again meanwhile comes back to the status, and the walk would never end.
	// The server's clock, which the workers' outcomes are compared with too.
	var began time.Time
	if err := readOne(ctx, s, r.Now(), &began); err != nil {
		return 0, err
	}
	total, stalled := 0, 0
	for slice := 0; ; slice++ {
		if slice > 0 {
			if err := pace(ctx, start); err != nil {
				return total, err
			}
		}
		start = time.Now()
		// A closed range of one key rather than GetAll, which reqlite answers with nothing.
		sel := table.Between(f.Status, f.Status, r.BetweenOpts{Index: rdb.IndexStatus, RightBound: "closed"}).Filter(func(d r.Term) r.Term {
			keep := r.Branch(d.HasFields("dateFinished"), d.Field("dateFinished").Lt(began), true)
			if f.Name != "" {
				keep = keep.And(d.Field("name").Eq(f.Name))
			}
			return keep
		})
		var ids []string
		if err := readAll(ctx, s, sel.Limit(f.batch()).Field("id"), &ids); err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		done, err := reanimate(ctx, ids)
		if errors.Is(err, job.ErrNotFound) && stalled < 3 {
			stalled++ // removed meanwhile: read the slice again
			continue
		}
		if err != nil {
			return total, err
		}
		stalled = 0
		total += len(done)
		if progress != nil {
			progress(total)
		}
	}
}

// Remove deletes the jobs of f finished before cutoff (f.Status completed, cancelled or
// terminated), through the finished index, a slice at a time, and calls progress after
// each slice with the count so far: it reads up to a batch of ids, then deletes those of
// them that still have the status, so that a job reanimated meanwhile stays. Deleted jobs
// leave the index, so each slice is read from the start of the range again; a slice of
// which nothing could be deleted (every job changed meanwhile) ends the walk, as reading
// it again would find the same jobs.
func Remove(ctx context.Context, s r.QueryExecutor, table r.Term, f Filter, cutoff time.Time, progress func(total int)) (int, error) {
	if st := job.Status(f.Status); !st.Finished() {
		return 0, fmt.Errorf("%w: remove takes completed, cancelled or terminated jobs, not %q", ErrStatus, f.Status)
	}
	total := 0
	var start time.Time
	for slice := 0; ; slice++ {
		if slice > 0 {
			if err := pace(ctx, start); err != nil {
				return total, err
			}
		}
		start = time.Now()
		sel := table.Between(r.MinVal, cutoff, r.BetweenOpts{Index: rdb.IndexFinishedDateFinished}).
			Filter(func(d r.Term) r.Term {
				keep := d.Field("status").Eq(f.Status)
				if f.Name != "" {
					keep = keep.And(d.Field("name").Eq(f.Name))
				}
				return keep
			})
		var ids []any
		if err := readAll(ctx, s, sel.Limit(f.batch()).Field("id"), &ids); err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		var res struct {
			Deleted int `rethinkdb:"deleted"`
		}
		del := table.GetAll(ids...).Filter(func(d r.Term) r.Term { return d.Field("status").Eq(f.Status) }).Delete()
		if err := readOne(ctx, s, del, &res); err != nil {
			return total, err
		}
		total += res.Deleted
		if progress != nil {
			progress(total)
		}
		if res.Deleted == 0 {
			return total, nil
		}
	}
}

// ParseAge reads an age that may be in days as well, which the time package lacks and
// which is how retention is usually said: 7d, 1.5d, 36h, 90m.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 7d or 36h", s)
		}
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 7d or 36h", s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: not negative", s)
	}
	return d, nil
}

func readAll(ctx context.Context, s r.QueryExecutor, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	return cur.All(dst)
}

func readOne(ctx context.Context, s r.QueryExecutor, term r.Term, dst any) error {
	cur, err := term.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	defer cur.Close()
	return cur.One(dst)
}
