package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// The commands that show what the queue's side tables hold: live workers, schedules and
// limits. Each reads through the library, as a worker would.

// workerRow is a worker as `workers --json` prints it.
type workerRow struct {
	QueueID     string    `json:"queueId"`
	Started     time.Time `json:"started"`
	LastSeen    time.Time `json:"lastSeen"`
	Running     int       `json:"running"`
	Concurrency int       `json:"concurrency"`
}

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
	rows := make([]workerRow, len(ws))
	for i, w := range ws {
		rows[i] = workerRow{w.QueueID, w.Started, w.LastSeen, w.Running, w.Concurrency}
	}
	if c.json {
		return json.NewEncoder(out).Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "no live Go workers (Node.js workers and Go workers with Heartbeat -1 do not register)")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE ID\tRUNNING\tSTARTED\tLAST SEEN")
	now := time.Now()
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%d/%d\t%s\t%s ago\n", r.QueueID, r.Running, r.Concurrency,
			r.Started.Local().Format(time.DateTime), now.Sub(r.LastSeen).Round(time.Second))
	}
	return w.Flush()
}

// scheduleRow is a schedule as `schedules --json` prints it.
type scheduleRow struct {
	Name string    `json:"name"`
	Spec string    `json:"spec"`
	Next time.Time `json:"next"`
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
	rows := make([]scheduleRow, len(ss))
	for i, s := range ss {
		rows[i] = scheduleRow{s.Name, s.Spec, s.Next}
	}
	if c.json {
		return json.NewEncoder(out).Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "no schedules")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSPEC\tNEXT RUN")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, r.Spec, r.Next.Local().Format(time.DateTime))
	}
	return w.Flush()
}

// limitRow is a limit as `limits --json` prints it.
type limitRow struct {
	Name     string `json:"name"`
	Starts   int    `json:"starts,omitempty"`
	Per      string `json:"per,omitempty"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Location string `json:"location,omitempty"`
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
	rows := make([]limitRow, 0, len(ls))
	for name, l := range ls {
		row := limitRow{Name: name, Starts: l.Starts}
		if l.Starts > 0 {
			row.Per = l.Per.String()
		}
		if l.Window != nil {
			row.From, row.To, row.Location = l.Window.From, l.Window.To, l.Window.Location
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b limitRow) int { return cmp.Compare(a.Name, b.Name) })
	if c.json {
		return json.NewEncoder(out).Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "no limits")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB NAME\tRATE\tWINDOW")
	for _, r := range rows {
		rate, window := "-", "-"
		if r.Starts > 0 {
			rate = fmt.Sprintf("%d per %s", r.Starts, r.Per)
		}
		if r.From != "" {
			window = fmt.Sprintf("%s–%s %s", r.From, r.To, r.Location)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, rate, window)
	}
	return w.Flush()
}
