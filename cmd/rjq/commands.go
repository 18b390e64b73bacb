package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

type command func(ctx context.Context, c config, args []string, out io.Writer) error

var commands = map[string]command{
	"summary":   cmdSummary,
	"list":      cmdList,
	"show":      cmdShow,
	"add":       cmdAdd,
	"cancel":    cmdCancel,
	"reanimate": cmdReanimate,
	"remove":    cmdRemove,
	"pause":     cmdPause,
	"resume":    cmdResume,
	"review":    cmdReview,
	"watch":     cmdWatch,
	"queues":    cmdQueues,
	"workers":   cmdWorkers,
	"schedules": cmdSchedules,
	"limits":    cmdLimits,
	"sequences": cmdSequences,
	"triggers":  cmdTriggers,
	"web":       cmdWeb,
}

func cmdSummary(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "summary", args, false)
	if err != nil {
		return err
	}
	defer done()
	s, err := q.Summary(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return json.NewEncoder(out).Encode(s)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "queue\twaiting\tactive\tcompleted\tcancelled\tfailed\tterminated\ttotal\t\n")
	if s.FinishedUnknown {
		fmt.Fprintf(w, "%s\t%d\t%d\t?\t?\t%d\t?\t≈%d\t\n", c.queue, s.Waiting, s.Active, s.Failed, s.Total)
		if err := w.Flush(); err != nil {
			return err
		}
		if _, err = fmt.Fprintf(out, "finished jobs not counted yet (about %d): a Queue Master's first tally counts them in the background\n", s.FinishedEstimate); err != nil {
			return err
		}
		return printBlocked(out, s.Blocked)
	}
	fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.queue, s.Waiting, s.Active, s.Completed, s.Cancelled, s.Failed, s.Terminated, s.Total)
	if err := w.Flush(); err != nil {
		return err
	}
	return printBlocked(out, s.Blocked)
}

// printBlocked says how many jobs of workflows wait for their parents, when any do: they
// are in Total, in none of the columns.
func printBlocked(out io.Writer, n int) error {
	if n == 0 {
		return nil
	}
	_, err := fmt.Fprintf(out, "blocked (jobs of workflows waiting for their parents): %d\n", n)
	return err
}

func cmdList(ctx context.Context, c config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	status := fs.String("status", "", "only jobs of this status, in its time order")
	name := fs.String("name", "", "only jobs of this name")
	group := fs.String("group", "", "with --status: only jobs of this group")
	sequence := fs.String("sequence", "", "the unfinished jobs of this sequence in the order they run")
	limit := fs.Int("limit", 50, "jobs per page")
	after := fs.String("after", "", "the page after this job id, in id order")
	from := fs.String("cursor", "", "with --status: the page after this cursor (printed with each page)")
	newer := fs.Bool("newer", false, "with --cursor: the page before it instead")
	field := fs.String("field", "", "with --status: only jobs whose data holds --value at this path (a.b.c)")
	value := fs.String("value", "", "with --field: the value, as JSON (42, true, \"x\") or else as text")
	text := fs.String("text", "", "with --status: only jobs whose log has this text in a message or error (any case)")
	if err := fs.Parse(args); err != nil {
		return usagef("list: %v", err)
	}
	if *status != "" && !job.Status(*status).Valid() {
		return usagef("list: unknown status %q (want waiting, active, completed, cancelled, failed, terminated or blocked)", *status)
	}
	if *limit < 1 || *limit > 10000 {
		return usagef("list: --limit must be within 1..10000")
	}
	ordered := *status != "" || *sequence != ""
	if (*from != "" || *newer || *field != "" || *text != "") && (!ordered || *after != "") {
		return usagef("list: --cursor, --newer, --field and --text list one --status (or --sequence) in order; --after pages in id order")
	}
	if *group != "" && *status == "" && *sequence == "" {
		return usagef("list: --group needs --status (say --status waiting): no index holds groups, so a page looks at %d jobs of the status at most", listing.SearchScan)
	}
	if (*group != "" || *sequence != "") && *after != "" {
		return usagef("list: --group and --sequence page with --cursor, not --after")
	}
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := c.checkQueue(ctx, s); err != nil {
		return err
	}
	table := r.DB(c.db).Table(c.queue)
	var p listing.ChronoPage
	if ordered && *after == "" {
		// One status, or one sequence: in its order, through its index.
		p, err = listing.Chrono(ctx, s, table, listing.Query{Status: *status, Name: *name, Group: *group, Sequence: *sequence,
			From: *from, Newer: *newer, Limit: *limit, Field: *field, Value: listing.ParseValue(*value), Text: *text})
		if errors.Is(err, job.ErrInvalid) {
			return usagef("list: %v", err)
		}
	} else {
		p.Jobs, err = listing.Page(ctx, s, table, *status, *name, *after, *limit)
		if len(p.Jobs) == *limit {
			p.Older = "--after " + p.Jobs[len(p.Jobs)-1].ID
		}
	}
	if err != nil {
		return err
	}
	var again []string
	for _, f := range [][2]string{{"--status", *status}, {"--sequence", *sequence}, {"--group", *group}, {"--name", *name},
		{"--field", *field}, {"--value", *value}, {"--text", *text}} {
		if f[1] != "" {
			again = append(again, f[0]+" "+shellQuote(f[1]))
		}
	}
	return printList(out, c.json, strings.Join(again, " "), p)
}

// shellQuote quotes s for a shell when it holds more than letters, digits and -_.:/.
func shellQuote(s string) string {
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printList prints a page of jobs, and how to ask for the pages around it: again are the
// flags that list the same jobs.
func printList(out io.Writer, asJSON bool, again string, p listing.ChronoPage) error {
	if asJSON {
		if p.Jobs == nil {
			p.Jobs = []listing.Job{}
		}
		return json.NewEncoder(out).Encode(p.Jobs)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSTATUS\tPRIORITY\tPROGRESS\tCREATED\tGROUP\tSEQUENCE")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, j := range p.Jobs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t%s\n", j.ID, j.Name, j.Status, job.Priority(j.Priority), j.Progress,
			listing.Time(j.DateCreated), dash(j.Group), dash(j.Sequence))
	}
	switch {
	case strings.HasPrefix(p.Older, "--after "):
		fmt.Fprintf(w, "more: rjq list %s\n", p.Older)
	case p.Older != "":
		fmt.Fprintf(w, "more: rjq list %s --cursor %s\n", again, p.Older)
	}
	if p.Newer != "" {
		fmt.Fprintf(w, "before: rjq list %s --cursor %s --newer\n", again, p.Newer)
	}
	if p.Scanned > 0 {
		fmt.Fprintf(w, "looked at %d jobs (at most %d a page)\n", p.Scanned, listing.SearchScan)
	}
	return w.Flush()
}

// ids checks the job ids of a command.
func ids(cmd string, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, usagef("%s: give one or more job ids", cmd)
	}
	for _, id := range args {
		if !job.ValidID(id) {
			return nil, usagef("%s: %q is not a job id (want a UUID)", cmd, id)
		}
	}
	return args, nil
}

// notFound maps the library's not-found error to exit code 3.
func notFound(err error) error {
	if errors.Is(err, job.ErrNotFound) {
		return fmt.Errorf("%w: %w", errNotFound, err)
	}
	return err
}

func cmdCancel(ctx context.Context, c config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reason := fs.String("reason", "cancelled with rjq", "the log message")
	// Ids and the flag in any order.
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return usagef("cancel: %v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return act(ctx, c, "cancel", rest, out, func(q *queue.Queue, list []string) ([]string, error) {
		return q.CancelJob(ctx, *reason, list...)
	})
}

// act runs an action on job ids; the library changes nothing when one id is unknown.
func act(ctx context.Context, c config, name string, args []string, out io.Writer, do func(*queue.Queue, []string) ([]string, error)) error {
	list, err := ids(name, args)
	if err != nil {
		return err
	}
	q, done, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	changed, err := do(q, list)
	if err != nil {
		return notFound(err)
	}
	if c.json {
		return json.NewEncoder(out).Encode(map[string]any{name: changed})
	}
	for _, id := range changed {
		fmt.Fprintf(out, "%s %s\n", name, id)
	}
	return nil
}

func cmdPause(ctx context.Context, c config, args []string, out io.Writer) error {
	return global(ctx, c, "pause", args, out, "paused", func(q *queue.Queue) error { return q.Pause(ctx, true) })
}

func cmdResume(ctx context.Context, c config, args []string, out io.Writer) error {
	return global(ctx, c, "resume", args, out, "resumed", func(q *queue.Queue) error { return q.Resume(ctx, true) })
}

func global(ctx context.Context, c config, command string, args []string, out io.Writer, done string, do func(*queue.Queue) error) error {
	q, closeQ, err := c.openNoArgs(ctx, command, args, false)
	if err != nil {
		return err
	}
	defer closeQ()
	if err := do(q); err != nil {
		return err
	}
	if c.json {
		return json.NewEncoder(out).Encode(map[string]any{"queue": c.queue, "paused": q.Paused(), "global": true})
	}
	fmt.Fprintf(out, "%s %s (every queue on the table)\n", c.queue, done)
	return nil
}

func cmdReview(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "review", args, false)
	if err != nil {
		return err
	}
	defer done()
	res, err := q.Review(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return json.NewEncoder(out).Encode(map[string]int{"reviewed": res.Reviewed, "removed": res.Removed})
	}
	fmt.Fprintf(out, "reviewed %d orphaned jobs, removed %d finished jobs\n", res.Reviewed, res.Removed)
	return nil
}

func cmdWatch(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "watch", args, true)
	if err != nil {
		return err
	}
	defer done()
	enc := json.NewEncoder(out)
	for e := range q.Events(ctx) {
		if e.Local {
			continue
		}
		if c.json {
			line := map[string]any{"time": time.Now(), "type": e.Type, "job": e.JobID, "queue": e.QueueID, "progress": e.Progress}
			if e.Reason != "" {
				line["reason"] = e.Reason
			}
			if e.Err != nil {
				line["error"] = e.Err.Error()
			}
			_ = enc.Encode(line)
			continue
		}
		fmt.Fprintf(out, "%s %-10s %s %s\n", listing.Time(time.Now()), e.Type, e.JobID, strings.TrimSpace(progressText(e)))
	}
	return nil
}

// progressText is what a watch line says after the job id: a progress event's percent,
// a cancelled event's reason ("deadline passed", say), a failed or terminated event's
// error.
func progressText(e queue.Event) string {
	switch {
	case e.Type == queue.EventProgress:
		return fmt.Sprintf("%.0f%%", e.Progress)
	case e.Reason != "":
		return e.Reason
	case e.Err != nil:
		return e.Err.Error()
	}
	return ""
}

// cmdQueues lists every queue of the database with its counts (the finished ones from
// the tally on big tables, marked ≈), the oldest waiting job's age, pause and live Go
// workers: a few index reads per queue (listing.Queues).
func cmdQueues(ctx context.Context, c config, args []string, out io.Writer) error {
	if len(args) > 0 {
		return usagef("queues takes no arguments")
	}
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	var dbs []string
	if err := readAll(ctx, s, r.DBList(), &dbs); err != nil {
		return err
	}
	if !slices.Contains(dbs, c.db) {
		return usagef("no database %q at %s (see --db)", c.db, c.addr)
	}
	queues, err := listing.Queues(ctx, s, c.db, time.Now())
	if err != nil {
		return err
	}
	if c.json {
		if queues == nil {
			queues = []listing.Queue{} // none is [], not null
		}
		return json.NewEncoder(out).Encode(queues)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tWAITING\tACTIVE\tFAILED\tCOMPLETED\tCANCELLED\tTERMINATED\tOLDEST WAITING\tPAUSED\tGO WORKERS")
	for _, q := range queues {
		if q.Error != "" {
			fmt.Fprintf(w, "%s\tcannot be read: %s\n", q.Name, q.Error)
			continue
		}
		n := func(st job.Status) string {
			if q.FinishedUnknown && st.Finished() {
				return "?"
			}
			v := fmt.Sprint(q.Counts[st])
			if !q.FinishedAsOf.IsZero() && st.Finished() {
				v = "≈" + v
			}
			return v
		}
		paused := ""
		if q.Paused {
			paused = "paused"
		}
		oldest := "–" // nothing waits
		if q.OldestWaitingSeconds > 0 {
			oldest = (time.Duration(q.OldestWaitingSeconds) * time.Second).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", q.Name, n(job.Waiting), n(job.Active), n(job.Failed),
			n(job.Completed), n(job.Cancelled), n(job.Terminated), oldest, paused, q.Workers)
	}
	return w.Flush()
}
