package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The bulk forms of reanimate and remove act on every job that a filter selects. A queue
// may hold millions of finished jobs, so they never read the selection whole: each slice
// reads at most --batch ids through an index (never a table scan), acts on them, and
// reports its progress on stderr, and only the counts are kept.

// maxBatch bounds the ids of one slice: a getAll of a thousand keys is one modest query
// on any server, and the ids of one slice are all rjq holds in memory.
const maxBatch = 1000

// bulkFlags are the flags of a bulk form.
type bulkFlags struct {
	status, name string
	olderThan    time.Duration
	batch        int
}

// parseBulk parses the arguments of reanimate or remove. It returns the ids of the by-id
// form, or nil and the filter of the bulk form; flags and ids may come in any order.
func parseBulk(cmd string, args []string, withAge bool) (ids []string, f *bulkFlags, err error) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var b bulkFlags
	var age string
	fs.StringVar(&b.status, "status", "", "act on every job of this status")
	fs.StringVar(&b.name, "name", "", "only jobs of this name (with --status)")
	fs.IntVar(&b.batch, "batch", maxBatch, "ids per query (1..1000)")
	if withAge {
		fs.StringVar(&age, "older-than", "", "only jobs finished longer ago than this, such as 7d or 36h")
	}
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, nil, usagef("%s: %v", cmd, err)
		}
		if fs.NArg() == 0 {
			break
		}
		ids = append(ids, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if b.status == "" {
		if b.name != "" || age != "" {
			return nil, nil, usagef("%s: --name and --older-than go with --status", cmd)
		}
		return ids, nil, nil
	}
	if len(ids) > 0 {
		return nil, nil, usagef("%s: give job ids or --status, not both", cmd)
	}
	if b.batch < 1 || b.batch > maxBatch {
		return nil, nil, usagef("%s: --batch must be within 1..%d", cmd, maxBatch)
	}
	if withAge {
		if age == "" {
			return nil, nil, usagef("%s --status: give --older-than too (0s for every such job)", cmd)
		}
		if b.olderThan, err = parseAge(age); err != nil {
			return nil, nil, usagef("%s --older-than: %v", cmd, err)
		}
	}
	return nil, &b, nil
}

// parseAge reads a duration that may be in days as well, which the time package lacks
// and which is how retention is usually said: 7d, 1.5d, 36h, 90m.
func parseAge(s string) (time.Duration, error) {
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

func cmdReanimate(ctx context.Context, c config, args []string, out io.Writer) error {
	list, f, err := parseBulk("reanimate", args, false)
	if err != nil {
		return err
	}
	if f == nil {
		return act(ctx, c, "reanimate", list, out, func(q *queue.Queue, list []string) ([]string, error) {
			return q.ReanimateJob(ctx, time.Time{}, list...)
		})
	}
	if f.status != string(job.Failed) && f.status != string(job.Terminated) {
		return usagef("reanimate --status: want failed or terminated, got %q", f.status)
	}
	q, done, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := reanimateAll(ctx, c, s, q, f)
	return bulkResult(c, out, "reanimated", n, err)
}

// reanimateAll reanimates every job of f.status (and f.name), a slice at a time through
// the status index. Reanimated jobs leave the status, so each slice is read from the
// start of the key again. Each slice goes through the library's ReanimateJob, which
// writes the jobs as every queue expects them (log entry, events); it changes nothing
// when one of the ids went meanwhile, so such a slice is read again.
//
// ReanimateJob takes no status guard: a failed job whose retry a worker claims between
// the read of its slice and the write is reanimated while it runs. Terminated jobs do not
// move on their own, so reanimating them is safe; for failed ones the window is one
// round trip.
func reanimateAll(ctx context.Context, c config, s *r.Session, q *queue.Queue, f *bulkFlags) (int, error) {
	table := r.DB(c.db).Table(c.queue)
	total, stalled := 0, 0
	for {
		// A closed range of one key rather than GetAll, which reqlite answers with nothing.
		sel := table.Between(f.status, f.status, r.BetweenOpts{Index: dbinit.IndexStatus, RightBound: "closed"})
		if f.name != "" {
			sel = sel.Filter(func(d r.Term) r.Term { return d.Field("name").Eq(f.name) })
		}
		var ids []string
		if err := readAll(ctx, s, sel.Limit(f.batch).Field("id"), &ids); err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		done, err := q.ReanimateJob(ctx, time.Time{}, ids...)
		if errors.Is(err, job.ErrNotFound) && stalled < 3 {
			stalled++ // removed meanwhile: read the slice again
			continue
		}
		if err != nil {
			return total, err
		}
		stalled = 0
		total += len(done)
		fmt.Fprintf(c.stderr, "rjq: reanimated %d (%d so far)\n", len(done), total)
	}
}

func cmdRemove(ctx context.Context, c config, args []string, out io.Writer) error {
	list, f, err := parseBulk("remove", args, true)
	if err != nil {
		return err
	}
	if f == nil {
		return act(ctx, c, "remove", list, out, func(q *queue.Queue, list []string) ([]string, error) {
			return q.RemoveJob(ctx, list...)
		})
	}
	if st := job.Status(f.status); st != job.Completed && st != job.Cancelled && st != job.Terminated {
		return usagef("remove --status: want completed, cancelled or terminated, got %q", f.status)
	}
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := c.checkQueue(ctx, s); err != nil {
		return err
	}
	n, err := removeAll(ctx, c, s, f, time.Now().Add(-f.olderThan))
	return bulkResult(c, out, "removed", n, err)
}

// removeAll deletes the jobs of f.status (and f.name) finished before cutoff, through
// the finished index, a slice at a time: it reads up to f.batch ids, then deletes those
// of them that still have the status, so that a job reanimated meanwhile stays. Deleted
// jobs leave the index, so each slice is read from the start of the range again; a
// slice of which nothing could be deleted (every job changed meanwhile) ends the walk,
// as reading it again would find the same jobs.
func removeAll(ctx context.Context, c config, s *r.Session, f *bulkFlags, cutoff time.Time) (int, error) {
	table := r.DB(c.db).Table(c.queue)
	total := 0
	for {
		sel := table.Between(r.MinVal, cutoff, r.BetweenOpts{Index: dbinit.IndexFinishedDateFinished}).
			Filter(func(d r.Term) r.Term {
				keep := d.Field("status").Eq(f.status)
				if f.name != "" {
					keep = keep.And(d.Field("name").Eq(f.name))
				}
				return keep
			})
		var ids []string
		if err := readAll(ctx, s, sel.Limit(f.batch).Field("id"), &ids); err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		anyIDs := make([]any, len(ids))
		for i, id := range ids {
			anyIDs[i] = id
		}
		res, err := table.GetAll(anyIDs...).Filter(func(d r.Term) r.Term {
			return d.Field("status").Eq(f.status)
		}).Delete().RunWrite(s, r.RunOpts{Context: ctx})
		if err != nil {
			return total, err
		}
		total += res.Deleted
		fmt.Fprintf(c.stderr, "rjq: removed %d (%d so far)\n", res.Deleted, total)
		if res.Deleted == 0 {
			return total, nil
		}
	}
}

// bulkResult prints the count of a bulk action; on failure, the count done before it
// goes to stderr with the error, since a bulk action stops part way.
func bulkResult(c config, out io.Writer, verb string, n int, err error) error {
	if err != nil {
		return fmt.Errorf("%s %d jobs, then: %w", verb, n, err)
	}
	if c.json {
		return json.NewEncoder(out).Encode(map[string]int{verb: n})
	}
	fmt.Fprintf(out, "%s %d jobs\n", verb, n)
	return nil
}
