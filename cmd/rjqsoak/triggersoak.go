package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// orderJobName is the name of the jobs the trigger makes.
const orderJobName = "order"

// writerConns is how many writes the writer has under way at most.
const writerConns = 32

// makeOrders opens the soak's own session (to the server, not through the proxy) and
// makes the orders table and its index on updatedAt, the table the writer writes and
// the trigger watches.
func (o *orchestrator) makeOrders(ctx context.Context) error {
	s, err := r.Connect(r.ConnectOpts{Address: o.addr, Database: o.db, MaxOpen: 4})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.addr, err)
	}
	o.rs = s
	tb := r.DB(o.db).Table(ordersTable)
	opts := r.RunOpts{Context: ctx}
	if _, err := r.DB(o.db).TableCreate(ordersTable).RunWrite(s, opts); err != nil {
		return fmt.Errorf("create the table %s: %w", ordersTable, err)
	}
	if _, err := tb.IndexCreate(ordersIndex).RunWrite(s, opts); err != nil {
		return fmt.Errorf("create the index %s: %w", ordersIndex, err)
	}
	cur, err := tb.IndexWait().Run(s, opts)
	if err != nil {
		return fmt.Errorf("wait for the index %s: %w", ordersIndex, err)
	}
	return cur.Close()
}

// waitRunner waits until a worker runs the trigger, so that the writer starts while a
// runner follows the table; it gives up after a minute.
func (o *orchestrator) waitRunner(ctx context.Context, q *queue.Queue) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if s, err := triggerStat(ctx, q); err == nil && s.Runner != "" {
			o.logf("soak: the trigger runs in pid %d", s.RunnerPID)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	o.logf("soak: no worker runs the trigger after a minute; the writer starts anyway")
}

// runnersDownStretch, with -runners-down, stops every worker for that long in the middle
// of the soak (start to end) while the writer goes on, then starts them again, and logs
// how long the trigger took to catch up; the whole stretch, to the end of the catch-up,
// counts as a fault's. The channel it returns is closed when it is done.
func (o *orchestrator) runnersDownStretch(ctx context.Context, start, end time.Time) <-chan struct{} {
	done := make(chan struct{})
	if !o.triggers || o.runnersDown <= 0 {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		at := start.Add((end.Sub(start) - o.runnersDown) / 2)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		from := time.Now()
		o.logf("soak: every worker stopped for %v (no trigger runner; the writer goes on)", o.runnersDown)
		o.mu.Lock()
		o.down = true
		o.mu.Unlock()
		o.stopWorkers()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(from.Add(o.runnersDown))):
		}
		o.mu.Lock()
		o.down = false
		o.mu.Unlock()
		up := time.Now()
		o.logf("soak: the workers start again: the trigger catches up")
		for range o.workers {
			if err := o.startWorker(); err != nil {
				o.logf("soak: start a worker: %v", err)
			}
		}
		o.watchCatchUp(ctx, up)
		// Until it has caught up, no runner follows: the versions overwritten meanwhile
		// are coalesced, as promised, so the stretch counts as a fault's.
		o.mu.Lock()
		o.spans = append(o.spans, span{from, time.Now()})
		o.mu.Unlock()
	}()
	return done
}

// watchCatchUp logs when the trigger's lag, after the runners came back at up, is below
// 2 s, or gives up after 10 minutes.
func (o *orchestrator) watchCatchUp(ctx context.Context, up time.Time) {
	q, err := o.observer(ctx)
	if err != nil {
		o.logf("soak: watch the catch-up: %v", err)
		return
	}
	defer q.Stop(context.Background())
	for time.Since(up) < 10*time.Minute && ctx.Err() == nil {
		if s, err := triggerStat(ctx, q); err == nil && s.Runner != "" && s.Lag < 2*time.Second {
			o.logf("soak: the trigger caught up %v after the workers started again (lag %v, %d jobs made)",
				time.Since(up).Round(100*time.Millisecond), s.Lag.Round(time.Millisecond), s.Jobs)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// observer is a queue of the soak's own that reads the table, outside the proxy.
func (o *orchestrator) observer(ctx context.Context) (*queue.Queue, error) {
	return queue.New(ctx, &queue.ConnectOptions{Address: o.addr, DB: o.db},
		&queue.Options{Name: queueName, NoChangeFeed: true, MasterInterval: -1, DatabaseInitDelay: -1, Heartbeat: -1})
}

// triggerStat is the state of the orders trigger.
func triggerStat(ctx context.Context, q *queue.Queue) (queue.TriggerStat, error) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stats, err := q.Triggers(sctx)
	if err != nil {
		return queue.TriggerStat{}, err
	}
	for _, s := range stats {
		if s.Name == ordersTrigger {
			return s, nil
		}
	}
	return queue.TriggerStat{}, errors.New("the trigger is not stored")
}

// waitTrigger waits, once the writer has stopped, until the trigger has caught up: its
// lag is 0 and its cursor is at the table's last version. It gives up after drainStall
// without progress.
func (o *orchestrator) waitTrigger(ctx context.Context, q *queue.Queue) {
	o.logf("soak: waiting for the trigger to catch up")
	best, progressed, logged := time.Duration(-1), time.Now(), time.Time{}
	for ctx.Err() == nil {
		s, err := triggerStat(ctx, q)
		last, lerr := o.lastVersion(ctx)
		cursor, _ := s.Cursor.(time.Time)
		switch {
		case err != nil || lerr != nil:
			o.logf("soak: reading the trigger: %v", errors.Join(err, lerr))
		case s.Lag == 0 && !last.IsZero() && sameMilli(cursor, last):
			o.logf("soak: the trigger caught up: cursor %s, %d jobs made", cursor.Format(time.RFC3339Nano), s.Jobs)
			return
		case best < 0 || s.Lag < best:
			best, progressed = s.Lag, time.Now()
		}
		if time.Since(progressed) > drainStall {
			o.logf("soak: the trigger's lag is %v, not down for %v: giving up the wait", s.Lag, drainStall)
			return
		}
		if time.Since(logged) >= 30*time.Second {
			logged = time.Now()
			o.logf("soak: trigger lag %v, cursor %v, last version %v", s.Lag, s.Cursor, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// lastVersion is the updatedAt of the orders table's last version.
func (o *orchestrator) lastVersion(ctx context.Context) (time.Time, error) {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var at time.Time
	err := r.DB(o.db).Table(ordersTable).MaxIndex(ordersIndex).Field(ordersIndex).
		ReadOne(&at, o.rs, r.RunOpts{Context: qctx})
	return at, err
}

// summary is a line of the soak's result, and whether it found no defect.
type summary interface {
	String() string
	clean() bool
}

// checkTriggers reads the writer's ledger, the orders table and the trigger's jobs, and
// checks them (checkOrders, and with features checkFeatures); each job's runs are
// judged as the producer's are, into res (but those of unique-key jobs, whose id is
// reused by the next job of the key).
func (o *orchestrator) checkTriggers(ctx context.Context, res *result) ([]summary, error) {
	writes, err := readWrites(filepath.Join(o.dir, "writer.ledger"))
	if err != nil {
		return nil, err
	}
	final, err := o.readOrders(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := o.readOrderJobs(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := o.readRuns()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.status.Finished() && j.uniqueKey == "" {
			o.judge(res, &job.Job{ID: j.id, Status: j.status, ProcessCount: j.processCount}, runs[j.id])
		}
	}
	o.mu.Lock()
	spans := append([]span(nil), o.spans...)
	o.mu.Unlock()
	var unique func(string) bool
	if o.features {
		unique = func(doc string) bool { return featuresOf(doc).unique }
	}
	tr := checkOrders(writes, final, jobs, spans, quietMargin, unique)
	for _, d := range tr.details {
		o.logf("%s", d)
	}
	out := []summary{tr}
	if o.features {
		fr := checkFeatures(jobs, runs, writes, final, groupLimits)
		for _, d := range fr.details {
			o.logf("%s", d)
		}
		out = append(out, fr)
	}
	return out, nil
}

// quietMargin is how far from any fault a version is written in a stretch without faults:
// the trigger's lease and its re-scan window.
const quietMargin = 6*time.Second + 5*time.Second

// readOrders reads the orders table: each document's last version.
func (o *orchestrator) readOrders(ctx context.Context) (map[string]version, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var docs []struct {
		ID string    `rethinkdb:"id"`
		V  int       `rethinkdb:"v"`
		At time.Time `rethinkdb:"updatedAt"`
	}
	cur, err := r.DB(o.db).Table(ordersTable).Pluck("id", "v", ordersIndex).Run(o.rs, r.RunOpts{Context: qctx})
	if err != nil {
		return nil, fmt.Errorf("read the orders: %w", err)
	}
	if err := cur.All(&docs); err != nil {
		return nil, fmt.Errorf("read the orders: %w", err)
	}
	out := make(map[string]version, len(docs))
	for _, d := range docs {
		out[d.ID] = version{v: d.V, at: d.At}
	}
	return out, nil
}

// readOrderJobs reads the trigger's jobs and their children from the queue's table.
func (o *orchestrator) readOrderJobs(ctx context.Context) ([]orderJob, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var docs []struct {
		ID           string `rethinkdb:"id"`
		Name         string `rethinkdb:"name"`
		Status       string `rethinkdb:"status"`
		ProcessCount int    `rethinkdb:"processCount"`
		Data         struct {
			Doc string `rethinkdb:"doc"`
			V   int    `rethinkdb:"v"`
		} `rethinkdb:"data"`
		Trigger struct {
			Name string    `rethinkdb:"name"`
			Doc  string    `rethinkdb:"doc"`
			At   time.Time `rethinkdb:"at"`
		} `rethinkdb:"rjqTrigger"`
		Group     string   `rethinkdb:"rjqGroup"`
		Sequence  string   `rethinkdb:"rjqSequence"`
		SeqAt     int64    `rethinkdb:"rjqSequenceAt"`
		UniqueKey string   `rethinkdb:"rjqUniqueKey"`
		DependsOn []string `rethinkdb:"rjqDependsOn"`
	}
	cur, err := r.DB(o.db).Table(queueName).Filter(func(j r.Term) r.Term {
		return r.Expr([]string{orderJobName, shipJobName}).Contains(j.Field("name"))
	}).
		Pluck("id", "name", "status", "processCount", "data", "rjqTrigger", "rjqGroup", "rjqSequence", "rjqSequenceAt",
			"rjqUniqueKey", "rjqDependsOn").Run(o.rs, r.RunOpts{Context: qctx})
	if err != nil {
		return nil, fmt.Errorf("read the trigger's jobs: %w", err)
	}
	if err := cur.All(&docs); err != nil {
		return nil, fmt.Errorf("read the trigger's jobs: %w", err)
	}
	out := make([]orderJob, len(docs))
	for i, d := range docs {
		out[i] = orderJob{id: d.ID, name: d.Name, doc: d.Data.Doc, v: d.Data.V, status: job.Status(d.Status),
			processCount: d.ProcessCount, trigger: d.Trigger.Name, markDoc: d.Trigger.Doc, at: d.Trigger.At,
			group: d.Group, seqKey: d.Sequence, seqAt: d.SeqAt, uniqueKey: d.UniqueKey, parents: d.DependsOn}
	}
	return out, nil
}
