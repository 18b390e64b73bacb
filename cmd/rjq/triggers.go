package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
)

// cmdTriggers lists the queue's triggers: what each watches, how far it has come, who
// runs it and what it made.
func cmdTriggers(ctx context.Context, c config, args []string, out io.Writer) error {
	q, done, err := c.openNoArgs(ctx, "triggers", args, false)
	if err != nil {
		return err
	}
	defer done()
	ts, err := q.Triggers(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return json.NewEncoder(out).Encode(listing.TriggerRows(ts))
	}
	if len(ts) == 0 {
		fmt.Fprintln(out, "no triggers")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTABLE\tINDEX\tCURSOR\tLAG\tRUNNER\tJOBS\tSKIPPED")
	for _, t := range ts {
		runner := "none"
		if t.Runner != "" {
			runner = fmt.Sprintf("%s pid %d since %s", t.RunnerHost, t.RunnerPID, listing.Time(t.RunnerSince))
		}
		fmt.Fprintf(w, "%s\t%s.%s\t%s\t%s\t%s\t%s\t%d\t%d\n", t.Name, t.DB, t.Table, t.Index, cursorText(t.Cursor),
			t.Lag.Round(time.Millisecond), runner, t.Jobs, t.Skipped)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, t := range ts {
		if t.LastSkip != "" {
			fmt.Fprintf(out, "%s: last skipped %s\n", t.Name, t.LastSkip)
		}
	}
	return nil
}

// cursorText is a trigger's cursor as the table shows it.
func cursorText(v any) string {
	switch v := v.(type) {
	case nil:
		return "(the start)"
	case time.Time:
		return listing.Time(v)
	}
	return fmt.Sprint(v)
}
