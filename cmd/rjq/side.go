package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The commands that show what the queue's side tables hold: live workers, schedules and
// limits; and the sequences of its jobs. Each reads through the library, as a worker
// would.

func cmdWorkers(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "workers", args, false)
	if err != nil {
		return err
	}
	defer done()
	ws, err := q.Workers(ctx)
	if err != nil {
		return err
	}
	if c.json {
		if ws == nil {
			ws = []queue.Worker{} // none is [], not null
		}
		return json.NewEncoder(out).Encode(ws)
	}
	if len(ws) == 0 {
		fmt.Fprintln(out, "no live Go workers (Node.js workers and Go workers with Heartbeat -1 do not register)")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE ID\tRUNNING\tSTARTED\tLAST SEEN")
	now := time.Now()
	for _, r := range ws {
		fmt.Fprintf(w, "%s\t%d/%d\t%s\t%s ago\n", r.QueueID, r.Running, r.Concurrency,
			listing.Time(r.Started), now.Sub(r.LastSeen).Round(time.Second))
	}
	return w.Flush()
}

func cmdSchedules(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "schedules", args, false)
	if err != nil {
		return err
	}
	defer done()
	ss, err := q.Schedules(ctx)
	if err != nil {
		return err
	}
	if c.json {
		if ss == nil {
			ss = []queue.Schedule{}
		}
		return json.NewEncoder(out).Encode(ss)
	}
	if len(ss) == 0 {
		fmt.Fprintln(out, "no schedules")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSPEC\tNEXT RUN")
	for _, r := range ss {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, r.Spec, listing.Time(r.Next))
	}
	return w.Flush()
}

func cmdLimits(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "limits", args, false)
	if err != nil {
		return err
	}
	defer done()
	ls, err := q.Limits(ctx)
	if err != nil {
		return err
	}
	stats, partial, err := q.Groups(ctx)
	if err != nil {
		return err
	}
	rows, groups := listing.LimitRows(ls), listing.GroupRows(stats)
	if c.json {
		// The job names' rows, as always, then the groups' ({"group", "limit", "waiting",
		// "active"}).
		all := make([]any, 0, len(rows)+len(groups))
		for _, r := range rows {
			all = append(all, r)
		}
		for _, g := range groups {
			all = append(all, g)
		}
		return json.NewEncoder(out).Encode(all)
	}
	if len(rows) == 0 && len(groups) == 0 {
		fmt.Fprintln(out, "no limits")
		return nil
	}
	if err := printLimits(out, rows, groups); err != nil {
		return err
	}
	if partial {
		fmt.Fprintln(out, "(jobs counted among the first 20,000 unfinished jobs only)")
	}
	return nil
}

func cmdSequences(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "sequences", args, false)
	if err != nil {
		return err
	}
	defer done()
	stats, partial, err := q.Sequences(ctx)
	if err != nil {
		return err
	}
	rows := listing.SequenceRows(stats)
	if c.json {
		return json.NewEncoder(out).Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "no sequences with unfinished jobs")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SEQUENCE\tWAITING\tACTIVE\tFAILED\tHELD BY")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s (%s)\n", r.Sequence, r.Waiting, r.Active, r.Failed, r.Head, r.HeadStatus)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if partial {
		fmt.Fprintln(out, "(jobs counted among the first 20,000 unfinished jobs of sequences only)")
	}
	return nil
}

// printLimits writes the limits by job name, then those of groups, as two tables.
func printLimits(out io.Writer, rows []listing.LimitRow, groups []listing.GroupRow) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(rows) > 0 {
		fmt.Fprintln(w, "JOB NAME\tRATE\tWINDOW\tRUNNING")
	}
	for _, r := range rows {
		rate, window, running := "-", "-", "-"
		if r.Starts > 0 {
			rate = fmt.Sprintf("%d per %s", r.Starts, time.Duration(r.PerMs)*time.Millisecond)
		}
		if r.From != "" {
			window = fmt.Sprintf("%s–%s %s", r.From, r.To, r.Location)
		}
		if r.Running > 0 {
			running = fmt.Sprintf("at most %d", r.Running)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Name, rate, window, running)
	}
	if len(rows) > 0 && len(groups) > 0 {
		fmt.Fprintln(w)
	}
	if len(groups) > 0 {
		fmt.Fprintln(w, "GROUP\tLIMIT\tRATE\tWAITING\tACTIVE")
	}
	for _, g := range groups {
		name, waiting, active := g.Group, strconv.Itoa(g.Waiting), strconv.Itoa(g.Active)
		if name == "" {
			name, waiting, active = "(default)", "-", "-"
		}
		running, rate := fmt.Sprintf("at most %d running", g.Limit), "-"
		if g.Limit == 0 {
			running = "no limit"
		}
		if g.Starts > 0 {
			rate = fmt.Sprintf("%d starts per %s", g.Starts, time.Duration(g.PerMs)*time.Millisecond)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, running, rate, waiting, active)
	}
	return w.Flush()
}
