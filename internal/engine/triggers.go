package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Trigger is queue.Trigger, whose doc says what it means.
type Trigger struct {
	Name, DB, Table, Index, Field string
	Rescan                        time.Duration
	Filter                        func(doc map[string]any) bool
	Job                           func(ctx context.Context, doc map[string]any) (*job.Job, error)
	Deleted                       func(ctx context.Context, last map[string]any) (*job.Job, error)
}

// TriggerStat is queue.TriggerStat.
type TriggerStat struct {
	rdb.StoredTrigger
	// Declared is set for a trigger this process declared (it may run it).
	Declared bool
	// Lag is how far behind the trigger is now.
	Lag time.Duration
}

// maxTriggerName bounds a trigger's name, the id of its document.
const maxTriggerName = 127

// DefaultRescan is the re-scan window of a trigger without one.
const DefaultRescan = 5 * time.Second

// checkTrigger refuses a trigger that cannot run, and fills its defaults: the queue's
// database, the index's name as the field, DefaultRescan.
func checkTrigger(t *Trigger, db string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: "+format, append([]any{ErrInvalidTrigger, errtext.Key(t.Name)}, args...)...)
	}
	switch {
	case t.Name == "" || len(t.Name) > maxTriggerName:
		return bad("want a name of 1 to %d bytes", maxTriggerName)
	case t.Table == "":
		return bad("Table is empty: name the table to watch")
	case t.Index == "":
		return bad("Index is empty: name a secondary index on a time or a number that every write raises")
	case t.Job == nil:
		return bad("Job is nil: give the func that makes a document's job")
	case t.Rescan < 0:
		return bad("Rescan must not be negative")
	}
	if t.DB == "" {
		t.DB = db
	}
	if t.Field == "" {
		t.Field = t.Index
	}
	if t.Rescan == 0 {
		t.Rescan = DefaultRescan
	}
	return nil
}

// versionOf is the index value of doc, a time or a number, or why it has none.
func versionOf(doc map[string]any, field string) (any, error) {
	switch v := doc[field].(type) {
	case time.Time:
		return v, nil
	case float64:
		return v, nil
	case nil:
		return nil, fmt.Errorf("its field %q is missing or null", field)
	default:
		return nil, fmt.Errorf("its field %q is a %T, not a time or a number", field, v)
	}
}

// triggerSpace is the namespace of the ids of the jobs triggers make.
var triggerSpace = uuid.MustParse("4a1c2f0e-5b8d-4f6e-9c3a-7d2b1e0f8a61")

// triggerJobID is the id of the job trigger name makes for the version of the document
// id whose index value is v: the same for the same version however often it is seen, and
// another for every other.
func triggerJobID(name string, id, v any) string {
	key, _ := json.Marshal(id) // a primary key: a string, a number, an array of them
	var at string
	switch v := v.(type) {
	case time.Time:
		at = "t" + strconv.FormatInt(v.UnixNano(), 10)
	case float64:
		at = "n" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return uuid.NewSHA1(triggerSpace, []byte(name+"\x00"+string(key)+"\x00"+at)).String()
}

// lagOf is how far behind a trigger at the index value v is at now: for a time, now − v
// (never negative); for a number, unknown (0).
func lagOf(v any, now time.Time) time.Duration {
	if t, ok := v.(time.Time); ok && now.After(t) {
		return now.Sub(t)
	}
	return 0
}

// triggerSet is the triggers this process declared: the Job funcs live here.
type triggerSet struct {
	mu sync.Mutex
	m  map[string]*declared
}

// declared is a trigger this process declared, and its runner when it runs one.
type declared struct {
	t      Trigger
	cancel context.CancelFunc
	done   chan struct{}
}

// AddTrigger is queue.Queue.AddTrigger, whose doc says what it does.
func (q *Queue) AddTrigger(ctx context.Context, t Trigger) error {
	if err := checkTrigger(&t, q.cfg.DB); err != nil {
		return err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	src := rdb.TriggerSource{DB: t.DB, Table: t.Table, Index: t.Index, Field: t.Field}
	if err := q.db.CheckTriggerSource(ctx, src); err != nil {
		return fmt.Errorf("queue %s: trigger %s: %w", q.cfg.Name, errtext.Key(t.Name), err)
	}
	if err := q.assertSide(ctx, rdb.TriggersSuffix); err != nil {
		return err
	}
	stored := rdb.StoredTrigger{Name: t.Name, DB: t.DB, Table: t.Table, Index: t.Index, Field: t.Field,
		Rescan: float64(t.Rescan.Milliseconds())}
	if err := q.onSide(ctx, rdb.TriggersSuffix, func() error { return q.db.PutTrigger(ctx, stored) }); err != nil {
		return fmt.Errorf("queue %s: store trigger %s: %w", q.cfg.Name, errtext.Key(t.Name), err)
	}
	q.declare(t)
	return nil
}

// declare keeps t as this process's, and runs it when this queue is a Queue Master (one
// runner across every process: see runTrigger), in place of an earlier declaration.
func (q *Queue) declare(t Trigger) {
	q.undeclare(t.Name)
	d := &declared{t: t, done: make(chan struct{})}
	q.triggers.mu.Lock()
	if q.triggers.m == nil {
		q.triggers.m = make(map[string]*declared)
	}
	q.triggers.m[t.Name] = d
	q.triggers.mu.Unlock()
	if !q.cfg.Master() {
		close(d.done)
		return
	}
	ctx, cancel := context.WithCancel(q.bg.Context())
	d.cancel = cancel
	q.bg.Go(func(context.Context) {
		defer close(d.done)
		q.runTrigger(ctx, d.t)
	})
}

// undeclare forgets the trigger name and stops its runner here, waiting for it.
func (q *Queue) undeclare(name string) {
	q.triggers.mu.Lock()
	d := q.triggers.m[name]
	delete(q.triggers.m, name)
	q.triggers.mu.Unlock()
	if d != nil && d.cancel != nil {
		d.cancel()
		<-d.done
	}
}

// RemoveTrigger is queue.Queue.RemoveTrigger, whose doc says what it does.
func (q *Queue) RemoveTrigger(ctx context.Context, name string) error {
	end, err := q.begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	q.undeclare(name)
	found, err := q.db.DeleteTrigger(ctx, name)
	if err != nil {
		return fmt.Errorf("queue %s: remove trigger %s: %w", q.cfg.Name, errtext.Key(name), err)
	}
	if !found {
		return fmt.Errorf("queue %s: remove trigger %s: %w", q.cfg.Name, errtext.Key(name), job.ErrNotFound)
	}
	return nil
}

// Triggers is queue.Queue.Triggers, whose doc says what it does.
func (q *Queue) Triggers(ctx context.Context) ([]TriggerStat, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	stored, err := q.db.Triggers(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue %s: list triggers: %w", q.cfg.Name, err)
	}
	now := time.Now()
	out := make([]TriggerStat, len(stored))
	for i, s := range stored {
		lag, err := q.triggerLag(ctx, s, now)
		if err != nil {
			// The watched table gone, say: the trigger is listed all the same.
			lag = time.Duration(s.Lag * float64(time.Second))
		}
		out[i] = TriggerStat{StoredTrigger: s, Lag: lag}
	}
	q.triggers.mu.Lock()
	defer q.triggers.mu.Unlock()
	for i := range out {
		out[i].Declared = q.triggers.m[out[i].Name] != nil
	}
	return out, nil
}

// triggerLag is how far behind trigger s is at now: the age of the first version past its
// cursor (one index read), for an index of times; what its runner last recorded for one
// of numbers, whose values say nothing of time.
func (q *Queue) triggerLag(ctx context.Context, s rdb.StoredTrigger, now time.Time) (time.Duration, error) {
	src := rdb.TriggerSource{DB: s.DB, Table: s.Table, Index: s.Index, Field: s.Field}
	next, err := q.db.ReadVersions(ctx, src, s.Cursor, true, 1)
	if err != nil {
		return 0, fmt.Errorf("queue %s: trigger %s: %w", q.cfg.Name, errtext.Key(s.Name), err)
	}
	if len(next) == 0 {
		return 0, nil
	}
	if v, _ := versionOf(next[0].Doc, s.Field); v != nil {
		if _, isTime := v.(time.Time); isTime {
			return lagOf(v, now), nil
		}
	}
	return time.Duration(s.Lag * float64(time.Second)), nil
}

// errSkip marks a version a trigger skips: the document or the job it made cannot be
// used; the cursor goes on past it.
var errSkip = errors.New("skipped")
