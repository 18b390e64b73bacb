package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// jobRun is one attempt at a job, as `show` groups the log: from the entry that made the job
// active to the entry that ended the run. An operator asking why a job failed wants each
// attempt's worker, time, outcome and error side by side, not scattered among progress
// and update entries.
type jobRun struct {
	// Attempt is the job's processCount after the run's claim: 1 for the first.
	Attempt int `json:"attempt"`
	// QueueID is the queue that ran it (hostname:db:queue:pid:uuid); Host and PID come
	// from it, empty and 0 when it is not of that form.
	QueueID string `json:"queueId,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Started is nil when the log no longer holds the run's start (LimitJobLogs
	// truncated it).
	Started *time.Time `json:"started,omitempty"`
	// Ended is nil while the run goes on.
	Ended *time.Time `json:"ended,omitempty"`
	// DurationMs is the run's length in milliseconds, as the log records it (the unit of
	// the database format); else from Started to Ended; 0 when neither is known.
	DurationMs float64 `json:"durationMs,omitempty"`
	// Outcome is the status the run left the job in (completed, failed, terminated,
	// cancelled, or waiting when repeated or passed back), "running" while it goes on, or
	// "unknown" when the job moved on without an entry that says how.
	Outcome      string `json:"outcome"`
	Message      string `json:"message,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	ErrorStack   string `json:"errorStack,omitempty"`
	// entries are the run's log entries, for the text output.
	entries []job.LogEntry
}

// parseQueueID splits a queue id, hostname:db:queue:pid:uuid, read from the right: db,
// queue and uuid hold no colon, while a host name (an IPv6 address) may.
func parseQueueID(id string) (host string, pid int, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) < 5 {
		return "", 0, false
	}
	n := len(parts)
	pid, err := strconv.Atoi(parts[n-2])
	if err != nil {
		return "", 0, false
	}
	return strings.Join(parts[:n-4], ":"), pid, true
}

// groupRuns splits a job's log into the entries before its first run and its runs. A run
// starts at an active entry that says the job was retrieved, or at an active entry of a
// later processCount (a log written by some other client, or truncated); it ends at its first entry of
// another status. An ending entry with no start before it (a truncated log) makes a run
// of its own.
func groupRuns(j *job.Job) (before []job.LogEntry, runs []*jobRun) {
	var cur *jobRun
	for _, e := range j.Log {
		switch {
		case e.Status == job.Active && (e.Message == job.MessageActive || cur == nil || e.ProcessCount > cur.Attempt):
			if cur != nil && cur.Ended == nil {
				cur.Outcome = "unknown"
			}
			started, attempt := e.Date, e.ProcessCount
			if e.Message == job.MessageActive {
				// Both libraries write the count before the claim's increment in the
				// claim's entry, and the count after it in every later entry.
				attempt++
			}
			cur = &jobRun{Attempt: attempt, Started: &started, Outcome: "running"}
			cur.setQueue(e.QueueID)
			runs = append(runs, cur)
		case cur != nil && cur.Ended == nil && e.Status != job.Active && e.Status != "":
			cur.end(e)
		case isRunEnd(e) && (cur == nil || cur.Ended != nil):
			// The outcome of a run whose start the log no longer holds.
			cur = &jobRun{Attempt: e.ProcessCount}
			cur.setQueue(e.QueueID)
			cur.end(e)
			runs = append(runs, cur)
		case cur == nil:
			before = append(before, e)
			continue
		}
		cur.entries = append(cur.entries, e)
	}
	if cur != nil && cur.Ended == nil && j.Status != job.Active {
		cur.Outcome = "unknown"
	}
	return before, runs
}

// isRunEnd tells an entry that ends a run: one that records how long it took, or an
// error's details. Entries such as "added" or "reanimated" end none.
func isRunEnd(e job.LogEntry) bool {
	return e.Duration > 0 || e.ErrorMessage != "" || e.ErrorStack != ""
}

func (u *jobRun) setQueue(id string) {
	u.QueueID = id
	if host, pid, ok := parseQueueID(id); ok {
		u.Host, u.PID = host, pid
	}
}

// end records the entry that ended the run.
func (u *jobRun) end(e job.LogEntry) {
	ended := e.Date
	u.Ended = &ended
	if e.ProcessCount > 0 {
		u.Attempt = e.ProcessCount // the count after the claim, the run's own
	}
	u.Outcome = string(e.Status)
	u.Message = e.Message
	u.ErrorMessage, u.ErrorStack = e.ErrorMessage, e.ErrorStack
	switch {
	case e.Duration > 0:
		u.DurationMs = float64(e.Duration) / float64(time.Millisecond)
	case u.Started != nil && ended.After(*u.Started):
		u.DurationMs = float64(ended.Sub(*u.Started)) / float64(time.Millisecond)
	}
	if u.QueueID == "" {
		u.setQueue(e.QueueID)
	}
}

// shown is a job as `show --json` prints it: the job's own fields (as before) and its
// runs.
type shown struct {
	*job.Job
	Runs []*jobRun
}

func cmdShow(ctx context.Context, c config, args []string, out io.Writer) error {
	list, err := ids("show", args)
	if err != nil {
		return err
	}
	q, done, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	jobs, err := q.GetJob(ctx, list...)
	if err != nil {
		return notFound(err)
	}
	if c.json {
		all := make([]shown, len(jobs))
		for i, j := range jobs {
			_, runs := groupRuns(j)
			all[i] = shown{j, runs}
		}
		return json.NewEncoder(out).Encode(all)
	}
	for i, j := range jobs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := printJob(out, j); err != nil {
			return err
		}
	}
	return nil
}

// printJob writes one job: its fields, then its log, the entries of each run under a
// heading that says who ran it, when, for how long, how it ended and why.
func printJob(out io.Writer, j *job.Job) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "id\t%s\nname\t%s\nstatus\t%s\npriority\t%s\nprogress\t%.0f%%\nretries\t%d of %d\nruns\t%d\ncreated\t%s\nenabled\t%s\nqueue\t%s\n",
		j.ID, j.Name, j.Status, j.Priority, j.Progress, j.RetryCount, j.RetryMax, j.ProcessCount,
		j.DateCreated.Format(time.RFC3339), j.DateEnable.Format(time.RFC3339), j.QueueID)
	data, _ := json.Marshal(j.Data)
	fmt.Fprintf(w, "data\t%s\n", data)
	if err := w.Flush(); err != nil {
		return err
	}
	before, runs := groupRuns(j)
	fmt.Fprintln(out, "log:")
	printEntries(out, before, nil)
	for _, u := range runs {
		fmt.Fprintf(out, "attempt %d: %s\n", u.Attempt, u.heading())
		if u.ErrorMessage != "" {
			fmt.Fprintf(out, "  error: %s\n", u.ErrorMessage)
		}
		if u.ErrorStack != "" {
			fmt.Fprintln(out, "  stack:")
			printIndented(out, "    ", u.ErrorStack)
		}
		printEntries(out, u.entries, u)
	}
	return nil
}

// heading is a run's one-line summary.
func (u *jobRun) heading() string {
	var b strings.Builder
	b.WriteString(u.Outcome)
	if u.QueueID != "" {
		fmt.Fprintf(&b, " by %s", u.QueueID)
		if u.Host != "" {
			fmt.Fprintf(&b, " (host %s, pid %d)", u.Host, u.PID)
		}
	}
	if u.Started != nil {
		fmt.Fprintf(&b, ", started %s", u.Started.Format(time.RFC3339))
	}
	if u.DurationMs > 0 {
		d := time.Duration(u.DurationMs * float64(time.Millisecond))
		fmt.Fprintf(&b, ", took %s", d.Round(time.Millisecond))
	}
	return b.String()
}

// printEntries writes log entries, one line each. An entry's error and stack follow it,
// unless they are its run's, which the run's heading has shown.
func printEntries(out io.Writer, entries []job.LogEntry, u *jobRun) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", e.Date.Format(time.RFC3339), e.Type, e.Status, e.Message)
		ownErr := u != nil && u.Ended != nil && e.Date.Equal(*u.Ended) && e.ErrorMessage == u.ErrorMessage && e.ErrorStack == u.ErrorStack
		if ownErr || (e.ErrorMessage == "" && e.ErrorStack == "") {
			continue
		}
		_ = w.Flush()
		if e.ErrorMessage != "" {
			fmt.Fprintf(out, "    error: %s\n", e.ErrorMessage)
		}
		if e.ErrorStack != "" {
			fmt.Fprintln(out, "    stack:")
			printIndented(out, "      ", e.ErrorStack)
		}
	}
	_ = w.Flush()
}

func printIndented(out io.Writer, indent, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(out, "%s%s\n", indent, line)
	}
}
