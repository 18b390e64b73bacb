package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/bulk"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The bulk forms of reanimate and remove act on every job that a filter selects, a slice
// at a time (package internal/bulk), and report their progress on stderr.

const maxBatch = bulk.MaxBatch

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
		if b.olderThan, err = bulk.ParseAge(age); err != nil {
			return nil, nil, usagef("%s --older-than: %v", cmd, err)
		}
	}
	return nil, &b, nil
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
	n, err := bulk.Reanimate(ctx, s, r.DB(c.db).Table(c.queue), bulk.Filter{Status: f.status, Name: f.name, Batch: f.batch},
		func(ctx context.Context, ids []string) ([]string, error) {
			return q.ReanimateJob(ctx, time.Time{}, ids...)
		},
		c.progress("reanimated"))
	return bulkResult(c, out, "reanimated", n, err)
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
	n, err := bulk.Remove(ctx, s, r.DB(c.db).Table(c.queue), bulk.Filter{Status: f.status, Name: f.name, Batch: f.batch},
		time.Now().Add(-f.olderThan), c.progress("removed"))
	return bulkResult(c, out, "removed", n, err)
}

// progress reports a bulk action's count so far on stderr.
func (c config) progress(verb string) func(total int) {
	last := 0
	return func(total int) {
		fmt.Fprintf(c.stderr, "rjq: %s %d (%d so far)\n", verb, total-last, total)
		last = total
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
