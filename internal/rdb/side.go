package rdb

import (
	"context"
	"errors"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The side tables of a queue, which the Node.js library never reads: its cron schedules
// (one document per schedule, keyed by name) and its workers (one per processing queue,
// keyed by queue id, written with each heartbeat).
const (
	SchedulesSuffix = "_schedules"
	WorkersSuffix   = "_workers"
)

// NoTable tells the error of a side table that was never made.
func NoTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "does not exist")
}

// sideTableWait bounds the wait for a side table that another process has just created.
const sideTableWait = 10 * time.Second

// readSide reads term, a read of the side table tbl, into dst. A side table is made by
// the first queue that needs it, so a reader may find it missing (dst is left empty) or
// made a moment ago and not ready for reads yet on a real server (it waits for the table,
// then reads once more).
func (t *Table) readSide(ctx context.Context, tbl, term r.Term, dst any) error {
	err := t.ReadAll(ctx, term, dst)
	if NoTable(err) {
		return nil
	}
	if !dberr.Transient(err) || ctx.Err() != nil {
		return err
	}
	var ready any
	if werr := t.ReadOne(ctx, tbl.Wait(r.WaitOpts{Timeout: sideTableWait.Seconds()}), &ready); werr != nil {
		return errors.Join(err, werr)
	}
	return t.ReadAll(ctx, term, dst)
}

// StoredSchedule is a schedule document. Its job options are stored with durations in
// milliseconds, as the job document stores them.
type StoredSchedule struct {
	Name    string         `rethinkdb:"id"`
	Spec    string         `rethinkdb:"spec"`
	Data    any            `rethinkdb:"data,omitempty"`
	Options map[string]any `rethinkdb:"options"`
	Next    time.Time      `rethinkdb:"next"`
	QueueID string         `rethinkdb:"queueId,omitempty"`
}

// ScheduleOptions are job options as a schedule stores them.
func ScheduleOptions(o job.Options) map[string]any {
	return map[string]any{
		"priority":    int(o.Priority),
		"timeout":     o.Timeout.Milliseconds(),
		"retryDelay":  o.RetryDelay.Milliseconds(),
		"repeatDelay": o.RepeatDelay.Milliseconds(),
		"retryMax":    max(o.RetryMax, 0), // NoRetries: none
		"repeat":      o.Repeat,
	}
}

// JobOptions reads the schedule's stored job options, named after the schedule; a value
// missing or of the wrong type takes its default. The stored values are exact (resolved
// when the schedule was made): a stored retryMax of 0 means no retries.
func (s StoredSchedule) JobOptions() job.Options {
	n := func(k string) int64 {
		f, _ := s.Options[k].(float64)
		return int64(f)
	}
	ms := func(k string) time.Duration { return time.Duration(n(k)) * time.Millisecond }
	retryMax := int(n("retryMax"))
	if _, ok := s.Options["retryMax"].(float64); ok && retryMax == 0 {
		retryMax = job.NoRetries
	}
	return job.Options{
		Name: s.Name, Priority: job.Priority(n("priority")), Timeout: ms("timeout"),
		RetryDelay: ms("retryDelay"), RepeatDelay: ms("repeatDelay"),
		RetryMax: retryMax, Repeat: int(n("repeat")),
	}.WithDefaults()
}

// PutSchedule writes the schedule s, replacing one of the same name.
func (t *Table) PutSchedule(ctx context.Context, s StoredSchedule) error {
	s.QueueID = t.QueueID
	doc := map[string]any{"id": s.Name, "spec": s.Spec, "data": s.Data, "options": s.Options, "next": s.Next, "queueId": s.QueueID}
	_, err := t.Write(ctx, t.Side(SchedulesSuffix).Insert(doc, r.InsertOpts{Conflict: "replace"}))
	return err
}

// DeleteSchedule removes the schedule name and reports whether there was one.
func (t *Table) DeleteSchedule(ctx context.Context, name string) (bool, error) {
	return t.deleteSide(ctx, SchedulesSuffix, name)
}

// deleteSide removes the document id of a side table and reports whether there was one
// (a table never made has none).
func (t *Table) deleteSide(ctx context.Context, suffix, id string) (bool, error) {
	res, err := t.Write(ctx, t.Side(suffix).Get(id).Delete())
	if NoTable(err) {
		return false, nil
	}
	return res.Deleted > 0, err
}

// Schedules reads every schedule, by name, without their payloads.
func (t *Table) Schedules(ctx context.Context) ([]StoredSchedule, error) {
	var out []StoredSchedule
	tbl := t.Side(SchedulesSuffix)
	err := t.readSide(ctx, tbl, tbl.OrderBy("id").Pluck("id", "spec", "next"), &out)
	return out, err
}

// DueSchedules reads the schedules whose next fire time has come by the server's clock.
func (t *Table) DueSchedules(ctx context.Context) ([]StoredSchedule, error) {
	var out []StoredSchedule
	tbl := t.Side(SchedulesSuffix)
	err := t.readSide(ctx, tbl, tbl.Filter(func(s r.Term) r.Term { return s.Field("next").Le(r.Now()) }), &out)
	return out, err
}

// MoveSchedule sets the next fire time of the schedule name to following, if it is still
// from (a compare-and-set: of several masters, one moves it).
func (t *Table) MoveSchedule(ctx context.Context, name string, from, following time.Time) error {
	_, err := t.Write(ctx, t.Side(SchedulesSuffix).Get(name).Update(func(row r.Term) any {
		return r.Branch(row.Field("next").Eq(from), map[string]any{"next": following}, map[string]any{})
	}))
	return err
}

// RenewLeases moves the dateEnable of the running jobs (id → the processCount of the run)
// to lease from now by the server's clock, for the jobs still owned by their run whose
// lease ends sooner.
func (t *Table) RenewLeases(ctx context.Context, running map[string]int, lease time.Duration) error {
	owned := make(map[string]any, len(running))
	ids := make([]any, 0, len(running))
	for id, pc := range running {
		owned[id] = pc
		ids = append(ids, id)
	}
	secs := lease.Seconds()
	_, err := t.Write(ctx, r.Expr(owned).Do(func(pc r.Term) r.Term {
		return t.Term().GetAll(ids...).Update(func(row r.Term) any {
			mine := ownedBy(row, pc.Field(row.Field("id"))).And(row.Field("dateEnable").Lt(r.Now().Add(secs)))
			return r.Branch(mine, map[string]any{"dateEnable": r.Now().Add(secs)}, map[string]any{})
		})
	}))
	return err
}

// WorkerEntry is a processing queue's entry in the workers table.
type WorkerEntry struct {
	QueueID     string    `rethinkdb:"id"`
	Started     time.Time `rethinkdb:"started"`
	LastSeen    time.Time `rethinkdb:"lastSeen"`
	Running     int       `rethinkdb:"running"`
	Concurrency int       `rethinkdb:"concurrency"`
}

// WorkerBeat is what a beat writes to the workers table: the queue's entry.
type WorkerBeat struct {
	Started     time.Time
	Running     int
	Concurrency int
	Heartbeat   time.Duration
	// Limits asks for the table's limits too, in the same query (see Beat.Limits).
	Limits bool
}

// Beat is what a beat's query returns.
type Beat struct {
	// Workers are the live entries, by queue id, this queue's among them.
	Workers []WorkerEntry
	// Limits are the table's limits, as Limits reads them, when the beat asked for them
	// (none when the queue has no limits table).
	Limits *LimitSet
}

// PutWorker writes this queue's worker entry, seen now by the server's clock, and returns
// the live entries (as Workers does) and, when w.Limits, the limits (as Limits does), in
// one query: a busy worker beats every few seconds and reads the limits as often, and the
// query count of several worker processes is what they add up to. Soft durability: the
// entry is rewritten every few seconds, and losing one costs nothing.
func (t *Table) PutWorker(ctx context.Context, w WorkerBeat) (Beat, error) {
	entry := map[string]any{
		"id": t.QueueID, "started": w.Started, "lastSeen": r.Now(), "running": w.Running,
		"concurrency": w.Concurrency, "heartbeat": w.Heartbeat.Milliseconds(),
	}
	tbl := t.Side(WorkersSuffix)
	// An object's values must be arrays, not selections.
	read := map[string]any{"workers": liveWorkers(tbl).CoerceTo("array")}
	if w.Limits {
		// Most queues have no limits table; a missing one reads as no limits, here as in
		// Limits, rather than failing the beat.
		read["limits"] = r.Branch(r.DB(t.DB).TableList().Contains(t.Name+LimitsSuffix),
			limitDocs(t.Side(LimitsSuffix)).CoerceTo("array"), r.Expr([]any{}))
	}
	put := tbl.Insert(entry, r.InsertOpts{Conflict: "replace", Durability: "soft"}).Do(func(res r.Term) r.Term {
		return r.Branch(res.Field("errors").Eq(0), read, r.Error(res.Field("first_error")))
	})
	var out struct {
		Workers []WorkerEntry    `rethinkdb:"workers"`
		Limits  []map[string]any `rethinkdb:"limits"`
	}
	if err := t.WriteOne(ctx, put, &out); err != nil {
		return Beat{}, err
	}
	b := Beat{Workers: out.Workers}
	if w.Limits {
		set := limitSet(out.Limits)
		b.Limits = &set
	}
	return b, nil
}

// liveWorkers are the entries of a workers table that are not stale, by queue id.
func liveWorkers(tbl r.Term) r.Term {
	return tbl.Filter(func(w r.Term) r.Term { return staleWorker(w).Not() }).OrderBy("id")
}

// DeleteWorker removes this queue's worker entry.
func (t *Table) DeleteWorker(ctx context.Context) error {
	_, err := t.Write(ctx, t.Side(WorkersSuffix).Get(t.QueueID).Delete())
	return err
}

// staleWorker is true for an entry not renewed for three of its heartbeats.
func staleWorker(w r.Term) r.Term {
	return w.Field("lastSeen").Add(w.Field("heartbeat").Mul(3).Div(1000)).Lt(r.Now())
}

// Workers reads the live worker entries, by queue id.
func (t *Table) Workers(ctx context.Context) ([]WorkerEntry, error) {
	var out []WorkerEntry
	tbl := t.Side(WorkersSuffix)
	err := t.readSide(ctx, tbl, liveWorkers(tbl), &out)
	return out, err
}

// PruneWorkers removes the entries of workers that stopped renewing them (they crashed).
func (t *Table) PruneWorkers(ctx context.Context) error {
	_, err := t.Write(ctx, t.Side(WorkersSuffix).Filter(staleWorker).Delete())
	if NoTable(err) {
		return nil
	}
	return err
}

// ExpiredLeases reports whether an active job's lease has passed: its worker died or
// hung. One read of the first entry of the original's active index.
func (t *Table) ExpiredLeases(ctx context.Context) (bool, error) {
	var n int
	err := t.ReadOne(ctx, t.Term().Between(r.MinVal, r.Now(), r.BetweenOpts{Index: IndexActiveDateEnable}).
		Limit(1).Count(), &n)
	return n > 0, err
}
