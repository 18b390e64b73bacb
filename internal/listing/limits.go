package listing

import (
	"cmp"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// LimitRow is a job name's limit as the tools print it in JSON (rjq limits --json, the
// dashboard's side tables): the period in milliseconds, as durations are stored.
type LimitRow struct {
	Name     string  `json:"name"`
	Starts   int     `json:"starts,omitempty"`
	PerMs    float64 `json:"perMs,omitempty"`
	From     string  `json:"from,omitempty"`
	To       string  `json:"to,omitempty"`
	Location string  `json:"location,omitempty"`
	Running  int     `json:"running,omitempty"`
}

// GroupRow is a group as the tools print it in JSON: its running limit (its own, else
// the default's; 0: none), named limit as queue.GroupStat names it, its rate, and how many of its
// jobs wait and run. The group "" is the default limit of every group without one, with
// no counts.
type GroupRow struct {
	Group string `json:"group"`
	Limit int    `json:"limit"`
	// Starts per PerMs is the group's rate limit (its own, else the default's; 0: none).
	Starts  int     `json:"starts"`
	PerMs   float64 `json:"perMs"`
	Waiting int     `json:"waiting"`
	Active  int     `json:"active"`
}

// GroupRows are the rows of stats (queue.Queue.Groups: the default limit, when one is
// set, and then the groups), sorted by group.
func GroupRows(stats []queue.GroupStat) []GroupRow {
	rows := make([]GroupRow, 0, len(stats))
	for _, g := range stats {
		rows = append(rows, GroupRow{Group: g.Group, Limit: g.Limit, Starts: g.Rate.Starts,
			PerMs: float64(g.Rate.Per.Milliseconds()), Waiting: g.Waiting, Active: g.Active})
	}
	slices.SortFunc(rows, func(a, b GroupRow) int { return cmp.Compare(a.Group, b.Group) })
	return rows
}

// LimitRows are the limits by job name, sorted by name.
func LimitRows(limits map[string]queue.Limit) []LimitRow {
	rows := make([]LimitRow, 0, len(limits))
	for name, l := range limits {
		row := LimitRow{Name: name, Starts: l.Starts, Running: l.Running}
		if l.Starts > 0 {
			row.PerMs = float64(l.Per.Milliseconds())
		}
		if l.Window != nil {
			row.From, row.To, row.Location = l.Window.From, l.Window.To, l.Window.Location
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b LimitRow) int { return cmp.Compare(a.Name, b.Name) })
	return rows
}

// SequenceRow is a sequence as the tools print it in JSON (rjq sequences --json, the
// dashboard's side tables): its unfinished jobs by status, and the one that holds it.
type SequenceRow struct {
	Sequence   string `json:"sequence"`
	Waiting    int    `json:"waiting"`
	Active     int    `json:"active"`
	Failed     int    `json:"failed"`
	Head       string `json:"head"`
	HeadStatus string `json:"headStatus"`
}

// SequenceRows are stats (queue.Queue.Sequences) as rows, in their order.
func SequenceRows(stats []queue.SequenceStat) []SequenceRow {
	rows := make([]SequenceRow, 0, len(stats))
	for _, s := range stats {
		rows = append(rows, SequenceRow{Sequence: s.Sequence, Waiting: s.Waiting, Active: s.Active, Failed: s.Failed,
			Head: s.Head, HeadStatus: string(s.HeadStatus)})
	}
	return rows
}

// TriggerRow is a trigger as the tools print it in JSON (queue.TriggerStat with its
// durations in milliseconds).
type TriggerRow struct {
	Name        string     `json:"name"`
	DB          string     `json:"db"`
	Table       string     `json:"table"`
	Index       string     `json:"index"`
	Field       string     `json:"field"`
	RescanMs    int64      `json:"rescanMs"`
	Cursor      any        `json:"cursor"`
	CursorID    any        `json:"cursorId"`
	LagMs       int64      `json:"lagMs"`
	Runner      string     `json:"runner"`
	RunnerHost  string     `json:"runnerHost"`
	RunnerPID   int        `json:"runnerPid"`
	RunnerSince *time.Time `json:"runnerSince"`
	Jobs        int64      `json:"jobs"`
	Skipped     int64      `json:"skipped"`
	LastSkip    string     `json:"lastSkip"`
}

// TriggerRows are the rows of stats (queue.Queue.Triggers), in its order.
func TriggerRows(stats []queue.TriggerStat) []TriggerRow {
	rows := make([]TriggerRow, len(stats))
	for i, t := range stats {
		rows[i] = TriggerRow{Name: t.Name, DB: t.DB, Table: t.Table, Index: t.Index, Field: t.Field,
			RescanMs: t.Rescan.Milliseconds(), Cursor: t.Cursor, CursorID: t.CursorID, LagMs: t.Lag.Milliseconds(),
			Runner: t.Runner, RunnerHost: t.RunnerHost, RunnerPID: t.RunnerPID,
			Jobs: t.Jobs, Skipped: t.Skipped, LastSkip: t.LastSkip}
		if t.Runner != "" {
			rows[i].RunnerSince = &t.RunnerSince
		}
	}
	return rows
}
