package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func cmdShow(ctx context.Context, c config, args []string, out io.Writer) error {
	list, err := ids("show", args)
	if err != nil {
		return err
	}
	q, s, done, err := c.openWithSession(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	jobs, err := q.GetJob(ctx, list...)
	if err != nil {
		return notFound(err)
	}
	sides := &rdb.Table{Session: s, DB: c.db, Name: c.queue}
	kin := make([][2][]listing.Related, len(jobs))
	waits := make([][]listing.Wait, len(jobs))
	for i, j := range jobs {
		if kin[i][0], kin[i][1], err = listing.Workflow(ctx, q, j); err != nil {
			return err
		}
		if waits[i], err = listing.WaitsFor(ctx, q, sides, j, kin[i][0], time.Now()); err != nil {
			return err
		}
	}
	if c.json {
		all := make([]map[string]any, len(jobs))
		for i, j := range jobs {
			all[i] = listing.Shown(j)
			if kin[i][0] != nil {
				all[i]["parents"] = kin[i][0]
			}
			if kin[i][1] != nil {
				all[i]["children"] = kin[i][1]
			}
			if listing.MayWait(j) {
				all[i]["waitsFor"] = nonNilWaits(waits[i])
			}
		}
		return json.NewEncoder(out).Encode(all)
	}
	for i, j := range jobs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := printJob(out, j, kin[i][0], kin[i][1], waits[i]); err != nil {
			return err
		}
	}
	return nil
}

// nonNilWaits is waits, or an empty list for none, which encodes as [] rather than null.
func nonNilWaits(waits []listing.Wait) []listing.Wait {
	if waits == nil {
		return []listing.Wait{}
	}
	return waits
}

// printJob writes one job: its fields, then its log, the entries of each run under a
// heading that says who ran it, when, for how long, how it ended and why.
func printJob(out io.Writer, j *job.Job, parents, children []listing.Related, waits []listing.Wait) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "id\t%s\nname\t%s\nstatus\t%s\npriority\t%s\nprogress\t%.0f%%\nretries\t%d of %d\nruns\t%d\ncreated\t%s\nenabled\t%s%s\n",
		j.ID, j.Name, j.Status, j.Priority, j.Progress, j.RetryCount, j.RetryMax, j.ProcessCount,
		listing.Time(j.DateCreated), listing.Time(j.DateEnable), listing.EnableNote(j))
	for i, wt := range waits {
		fmt.Fprintf(w, "%s\t%s\n", plural(i, "waits for"), wt.Text)
	}
	if len(waits) == 0 && listing.MayWait(j) && j.Status != job.Blocked {
		fmt.Fprintf(w, "waits for\ta free worker: it is due, and no limit or sequence holds it\n")
	}
	if !j.DateStarted.IsZero() {
		fmt.Fprintf(w, "started\t%s\n", listing.Time(j.DateStarted))
	}
	if !j.DateFinished.IsZero() {
		fmt.Fprintf(w, "finished\t%s\n", listing.Time(j.DateFinished))
	}
	if k := j.UniqueKey(); k != "" {
		fmt.Fprintf(w, "unique key\t%s%s\n", k, uniqueNote(j))
	}
	if d := j.Deadline(); !d.IsZero() {
		fmt.Fprintf(w, "deadline\t%s\n", listing.Time(d))
	}
	if g := j.Group(); g != "" {
		fmt.Fprintf(w, "group\t%s\n", g)
	}
	if q := j.Sequence(); q != "" {
		fmt.Fprintf(w, "sequence\t%s\n", q)
	}
	for i, p := range parents {
		fmt.Fprintf(w, "%s\t%s\n", plural(i, "parents"), related(p))
	}
	for i, c := range children {
		fmt.Fprintf(w, "%s\t%s\n", plural(i, "children"), related(c))
	}
	fmt.Fprintf(w, "queue\t%s\n", j.QueueID)
	data, _ := json.Marshal(j.Data)
	fmt.Fprintf(w, "data\t%s\n", data)
	if j.Status == job.Completed {
		var result any
		if err := j.Result(&result); err != nil {
			fmt.Fprintf(w, "result\t(%v)\n", err)
		} else {
			b, _ := json.Marshal(result)
			fmt.Fprintf(w, "result\t%s\n", b)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	before, runs := listing.Runs(j)
	fmt.Fprintln(out, "log:")
	printEntries(out, before, nil)
	for _, u := range runs {
		fmt.Fprintf(out, "attempt %d: %s\n", u.Attempt, heading(u))
		if u.Reason != "" {
			fmt.Fprintf(out, "  why: %s\n", u.Reason)
		}
		if u.ErrorMessage != "" {
			fmt.Fprintf(out, "  error: %s\n", u.ErrorMessage)
		}
		if u.ErrorStack != "" {
			fmt.Fprintln(out, "  stack:")
			printIndented(out, "    ", u.ErrorStack)
		}
		printEntries(out, u.Entries, u)
	}
	return nil
}

// heading is a run's one-line summary.
func heading(u *listing.Run) string {
	var b strings.Builder
	b.WriteString(u.Outcome)
	if u.QueueID != "" {
		fmt.Fprintf(&b, " by %s", u.QueueID)
		if u.Host != "" {
			fmt.Fprintf(&b, " (host %s, pid %d)", u.Host, u.PID)
		}
	}
	if u.Started != nil {
		fmt.Fprintf(&b, ", started %s", listing.Time(*u.Started))
	}
	if u.DurationMs > 0 {
		d := time.Duration(u.DurationMs * float64(time.Millisecond))
		fmt.Fprintf(&b, ", took %s", d.Round(time.Millisecond))
	}
	return b.String()
}

// printEntries writes log entries, one line each. An entry's error and stack follow it,
// unless they are its run's, which the run's heading has shown.
func printEntries(out io.Writer, entries []job.LogEntry, u *listing.Run) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", listing.Time(e.Date), e.Type, e.Status, e.Message)
		stack := listing.Stack(e.ErrorStack)
		ownErr := u != nil && u.Ended != nil && e.Date.Equal(*u.Ended) && e.ErrorMessage == u.ErrorMessage && stack == u.ErrorStack
		if ownErr || (e.ErrorMessage == "" && stack == "") {
			continue
		}
		_ = w.Flush()
		if e.ErrorMessage != "" {
			fmt.Fprintf(out, "    error: %s\n", e.ErrorMessage)
		}
		if stack != "" {
			fmt.Fprintln(out, "    stack:")
			printIndented(out, "      ", stack)
		}
	}
	_ = w.Flush()
}

func printIndented(out io.Writer, indent, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(out, "%s%s\n", indent, line)
	}
}

// uniqueNote is what a unique key's window and debounce add to it: " (kept 24h0m0s after
// it finished; debounce 1s)".
func uniqueNote(j *job.Job) string {
	var parts []string
	if d := j.UniqueFor(); d > 0 {
		parts = append(parts, fmt.Sprintf("kept %v after it finished", d))
	}
	if d := j.Debounce(); d > 0 {
		parts = append(parts, fmt.Sprintf("debounce %v", d))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// plural is the heading of the first line of a list, and nothing on the lines after it.
func plural(i int, heading string) string {
	if i == 0 {
		return heading
	}
	return ""
}

// related is a parent or child on one line: id, name and status.
func related(r listing.Related) string {
	if r.Name == "" || r.Name == r.ID {
		return fmt.Sprintf("%s  %s", r.ID, r.Status)
	}
	return fmt.Sprintf("%s  %s  %s", r.ID, r.Name, r.Status)
}
