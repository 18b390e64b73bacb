package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A trigger runs in one process at a time: a Queue Master that declared it and holds its
// lease (rdb.TakeTriggerLease), renewed with every record of its progress, at least every
// triggerLease/3. Another process that declared it takes it over once the lease ends.
//
// A runner opens the watched table's changefeed first, then catches up: it reads the
// versions past its cursor (less the re-scan window) in the index's order, triggerBatch a
// read, adds their jobs and moves the cursor past them, pausing as long as each batch
// took, so that a long catch-up takes half the server's time at most. Then it adds the
// jobs of the changes the feed brings (those that came meanwhile included). A job's id is
// derived from the trigger, the document and its version (triggerJobID), so a version
// seen twice (by the catch-up and the feed, or by two runners in a failover) adds one
// job. When the feed ends (a server restart, a cut, or more changes than it keeps while
// catching up), the runner catches up again from its cursor, which only moves past
// versions whose jobs have landed.

// triggerLease is how long a runner's lease lasts from its last renewal: another process
// takes the trigger over within it once the runner's process dies.
var triggerLease = 6 * time.Second

const (
	// triggerQuery bounds each query of a runner: one that runs out of time met a
	// connection gone silent, and the session's connections are replaced; the run ends
	// and starts over, well within the lease.
	triggerQuery = 3 * time.Second
	// triggerBatch is how many versions a catch-up read takes, and a write of the feed's
	// changes adds, at most.
	triggerBatch = 200
	// triggerFeedBuffer is how many changes the feed keeps while the runner catches up;
	// beyond it the feed is closed, and the runner catches up again after.
	triggerFeedBuffer = 10000
	// triggerRecord is how often a working runner records its progress.
	triggerRecord = time.Second
)

// runTrigger runs t while this process holds its lease, and tries to take it every
// triggerLease/3 while another does, until ctx ends or the trigger is removed.
func (q *Queue) runTrigger(ctx context.Context, t Trigger) {
	if q.Ready(ctx) != nil {
		return
	}
	host, _ := os.Hostname()
	me := rdb.TriggerRunner{Queue: q.id, Host: host, PID: os.Getpid()}
	var lastErr string
	var fails int
	wait := triggerLease / 3
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, triggerQuery)
		s, held, ok, err := q.db.TakeTriggerLease(lctx, t.Name, me, triggerLease)
		if err != nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
			q.stalled() // a connection gone silent
		}
		cancel()
		switch {
		case ctx.Err() != nil:
		case !ok && err == nil:
			q.log.Info("trigger removed: this process stops running it", "trigger", t.Name)
			return
		case held:
			q.log.Info("trigger runner starts", "trigger", t.Name, "table", t.DB+"."+t.Table, "cursor", cursorText(s.Cursor))
			run := &triggerRun{q: q, t: t, me: me.Queue, cursor: s.Cursor}
			err = run.loop(ctx)
			q.handOver(t.Name, me.Queue, err)
		}
		// A run or a lease that fails again and again (the watched table dropped, the
		// server away) is logged once and tried less often, up to every 30 s.
		wait = triggerLease / 3
		if err != nil && ctx.Err() == nil && !errors.Is(err, rdb.ErrLeaseLost) {
			if err.Error() != lastErr {
				lastErr = err.Error()
				q.log.Warn("a trigger's run failed; trying again", "trigger", t.Name, "err", err)
			}
			fails++
			wait = min(wait<<min(fails, 4), 30*time.Second)
		} else {
			lastErr, fails = "", 0
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// handOver ends this process's run of a trigger: it logs why and, unless another took
// the lease, gives the lease up at once so that another process takes over now.
func (q *Queue) handOver(name, me string, why error) {
	if errors.Is(why, rdb.ErrLeaseLost) {
		q.log.Warn("trigger handed over: another process holds its lease", "trigger", name)
		return
	}
	release, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := q.db.ReleaseTriggerLease(release, name, me); err != nil {
		q.log.Info("giving a trigger's lease up failed; another process takes over when it ends", "trigger", name, "err", err)
	}
	q.log.Info("trigger handed over", "trigger", name, "why", why)

}

// cursorText is a cursor as a log line shows it.
func cursorText(c *rdb.TriggerCursor) string {
	if c == nil {
		return "(the start)"
	}
	return fmt.Sprintf("%v (id %v)", c.V, c.ID)
}

// triggerRun is one run of a trigger by the process holding its lease.
type triggerRun struct {
	q  *Queue
	t  Trigger
	me string
	// cursor is where the versions done end (nil: none is).
	cursor *rdb.TriggerCursor
	// made, skipped and lastSkip are what the run did since its last record.
	made, skipped int64
	lastSkip      string
	recorded      time.Time
	// seenSkips are the versions skipped in this run, by document and reason.
	seenSkips map[string]bool
}

// source is the watched table.
func (tr *triggerRun) source() rdb.TriggerSource {
	return rdb.TriggerSource{DB: tr.t.DB, Table: tr.t.Table, Index: tr.t.Index, Field: tr.t.Field}
}

// loop catches up and follows the feed until ctx ends, the lease is lost, or a query
// fails (the caller takes the lease again and starts over).
func (tr *triggerRun) loop(ctx context.Context) error {
	for {
		feed, err := tr.openFeed(ctx)
		if err != nil {
			return err
		}
		n, err := tr.catchUp(ctx)
		if err == nil {
			if n > 0 {
				tr.q.log.Info("trigger caught up", "trigger", tr.t.Name, "versions", n, "cursor", cursorText(tr.cursor))
			}
			err = tr.follow(ctx, feed)
		}
		feed.stop()
		if err != nil && !errors.Is(err, errFeedEnded) && !errors.Is(err, errFeedStale) {
			return err
		}
		why := feed.err
		if errors.Is(err, errFeedStale) {
			why = err
		}
		tr.q.log.Info("a trigger's changefeed ended; catching up from its cursor", "trigger", tr.t.Name, "err", why)
	}
}

// triggerChange is a change the feed brought: a version (doc), or, with deleted, the last
// version of a document deleted.
type triggerChange struct {
	doc     map[string]any
	deleted bool
}

// errFeedEnded ends a follow whose feed ended, and errFeedStale one whose feed brought
// nothing of a version that was there a tick before (a connection gone silent): the run
// catches up again.
var (
	errFeedEnded = errors.New("the changefeed ended")
	errFeedStale = errors.New("the changefeed brought nothing of a version written two seconds ago: its connection may have gone silent")
)

// feedProbe is what the last tick saw: a version past the cursor (seen), and the cursor
// then (nil: none yet).
type feedProbe struct {
	seen bool
	at   *rdb.TriggerCursor
}

// feedStale reports whether the feed missed a version: one past the cursor now that was
// past it at the last tick too, the cursor not having moved (one index read a tick).
func (tr *triggerRun) feedStale(ctx context.Context, probe *feedProbe) (bool, error) {
	var next []rdb.Version
	err := tr.timed(ctx, func(ctx context.Context) (err error) {
		next, err = tr.q.db.ReadVersions(ctx, tr.source(), tr.cursor, true, 1)
		return err
	})
	if err == nil && len(next) > 0 {
		if _, verr := versionOf(next[0].Doc, tr.t.Field); verr != nil {
			next = nil // a value of another type sorts after every version: it waits for no feed
		}
	}
	if err != nil || len(next) == 0 {
		*probe = feedProbe{}
		return false, err
	}
	moved := tr.cursor != nil && (probe.at == nil || cursorBefore(*probe.at, *tr.cursor))
	if probe.seen && !moved {
		return true, nil
	}
	*probe = feedProbe{seen: true, at: tr.cursor}
	return false, nil
}

// triggerFeed is the watched table's changefeed, read in a goroutine into ch.
type triggerFeed struct {
	ch     chan triggerChange
	done   chan struct{}
	cancel context.CancelFunc
	err    error // why it ended, once done is closed
}

// openFeed opens the watched table's changefeed and returns once it is open.
func (tr *triggerRun) openFeed(ctx context.Context) (*triggerFeed, error) {
	fctx, cancel := context.WithCancel(ctx)
	f := &triggerFeed{ch: make(chan triggerChange, triggerFeedBuffer), done: make(chan struct{}), cancel: cancel}
	open := make(chan struct{})
	var overflow error
	go func() {
		defer close(f.done)
		err := changefeed.Follow(fctx, tr.q.session, tr.source().Term(), r.RunOpts{}, func() { close(open) }, func(c changefeed.Change) {
			ch := triggerChange{doc: c.New}
			if c.New == nil {
				if c.Old == nil || tr.t.Deleted == nil {
					return // a deletion: no version to make a job of
				}
				ch = triggerChange{doc: c.Old, deleted: true}
			}
			select {
			case f.ch <- ch:
			default:
				overflow = fmt.Errorf("more than %d changes came while the trigger caught up", triggerFeedBuffer)
				cancel()
			}
		})
		f.err = cmp.Or(overflow, err)
	}()
	wait := time.NewTimer(triggerQuery)
	defer wait.Stop()
	select {
	case <-open:
		return f, nil
	case <-f.done:
		cancel()
		return nil, fmt.Errorf("trigger %s: open the changefeed of %s.%s: %w", tr.t.Name, tr.t.DB, tr.t.Table, f.err)
	case <-wait.C:
		f.stop()
		tr.q.stalled() // a connection gone silent
		return nil, fmt.Errorf("trigger %s: open the changefeed of %s.%s: no answer in %v", tr.t.Name, tr.t.DB, tr.t.Table, triggerQuery)
	}
}

// stop closes the feed and waits for its goroutine.
func (f *triggerFeed) stop() {
	f.cancel()
	<-f.done
}

// catchUp adds the jobs of the versions past the cursor, less the re-scan window, batch
// by batch in the index's order, until a read comes back short; it returns how many
// versions it read.
func (tr *triggerRun) catchUp(ctx context.Context) (int, error) {
	from, ties := tr.rescanFrom()
	n := 0
	for {
		var versions []rdb.Version
		err := tr.timed(ctx, func(ctx context.Context) (err error) {
			versions, err = tr.q.db.ReadVersions(ctx, tr.source(), from, ties, triggerBatch)
			return err
		})
		if err != nil {
			return n, err
		}
		start := time.Now()
		docs := make([]map[string]any, len(versions))
		for i, v := range versions {
			docs[i] = v.Doc
		}
		if err := tr.add(ctx, docs); err != nil {
			return n, err
		}
		n += len(docs)
		if len(docs) == 0 {
			return n, tr.record(ctx, 0, true)
		}
		last := versions[len(versions)-1].Cursor(tr.t.Field)
		from, ties = &last, true
		tr.advanceTo(versions)
		full := len(docs) == triggerBatch
		lag := time.Duration(0)
		if full {
			lag = lagOf(last.V, time.Now())
		}
		if err := tr.record(ctx, lag, !full); err != nil || !full {
			return n, err
		}
		select { // half the server's time at most, so the queue's own work goes on
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(min(time.Since(start), triggerLease/3)):
		}
	}
}

// rescanFrom is where a catch-up starts: the cursor, less the re-scan window for an index
// of times (writes whose times land late, up to the window; the documents of the values
// in between are read again, and their jobs found added already).
func (tr *triggerRun) rescanFrom() (*rdb.TriggerCursor, bool) {
	c := tr.cursor
	if c == nil {
		return nil, false
	}
	at, isTime := c.V.(time.Time)
	if !isTime {
		return c, true
	}
	secs := float64(at.UnixNano())/1e9 - tr.t.Rescan.Seconds()
	if c.T != nil {
		secs = *c.T - tr.t.Rescan.Seconds()
	}
	return &rdb.TriggerCursor{V: at.Add(-tr.t.Rescan), T: &secs}, false
}

// follow adds the jobs of the feed's changes, a batch of those waiting at a time, until
// the feed ends, ctx ends or the lease is lost.
func (tr *triggerRun) follow(ctx context.Context, feed *triggerFeed) error {
	tick := time.NewTicker(triggerLease / 3)
	defer tick.Stop()
	var probe feedProbe
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-feed.done:
			return errFeedEnded
		case <-tick.C:
			if err := tr.record(ctx, 0, true); err != nil {
				return err
			}
			if stale, err := tr.feedStale(ctx, &probe); err != nil || stale {
				return cmp.Or(err, errFeedStale)
			}
		case c := <-feed.ch:
			batch := []triggerChange{c}
			for len(batch) < triggerBatch && len(feed.ch) > 0 {
				batch = append(batch, <-feed.ch)
			}
			if err := tr.addChanges(ctx, batch); err != nil {
				return err
			}
			lag := time.Duration(0)
			for _, c := range batch {
				if v, err := versionOf(c.doc, tr.t.Field); !c.deleted && err == nil {
					tr.advance(rdb.TriggerCursor{V: v, ID: c.doc["id"]})
					lag = max(lag, lagOf(v, time.Now()))
				}
			}
			if err := tr.record(ctx, lag, false); err != nil {
				return err
			}
		}
	}
}

// advanceTo moves the cursor to the last of versions with a time or a number. One of
// another type (a string, written by hand) sorts after every time and number in the
// index: a cursor there would pass over every version written after it.
func (tr *triggerRun) advanceTo(versions []rdb.Version) {
	for _, v := range slices.Backward(versions) {
		if _, err := versionOf(v.Doc, tr.t.Field); err == nil {
			tr.advance(v.Cursor(tr.t.Field))
			return
		}
	}
}

// advance moves the cursor to c when that is past it in the index's order, or at the same
// place with the time's exact epoch seconds where the cursor has none: a version the feed
// brought holds its time as the driver decoded it (to the millisecond), whose bound a
// server may read as just below the version itself, which then shows as lag for ever;
// the next catch-up's read of it carries the exact time.
func (tr *triggerRun) advance(c rdb.TriggerCursor) {
	if tr.cursor == nil || cursorBefore(*tr.cursor, c) ||
		(c.T != nil && tr.cursor.T == nil && !cursorBefore(c, *tr.cursor)) {
		tr.cursor = &c
	}
}

// record writes the run's progress when triggerRecord has passed since the last record, or
// now: it renews the lease too.
func (tr *triggerRun) record(ctx context.Context, lag time.Duration, now bool) error {
	if !now && time.Since(tr.recorded) < triggerRecord {
		return nil
	}
	p := rdb.TriggerProgress{Cursor: tr.cursor, Jobs: tr.made, Skipped: tr.skipped, LastSkip: tr.lastSkip, Lag: lag}
	err := tr.timed(ctx, func(ctx context.Context) error {
		return tr.q.db.RecordTrigger(ctx, tr.t.Name, tr.me, triggerLease, p)
	})
	if err != nil {
		return err
	}
	tr.made, tr.skipped, tr.lastSkip, tr.recorded = 0, 0, "", time.Now()
	return nil
}

// skip records that the version of document id was skipped, and why: once a run, for a
// document a catch-up reads again (one whose value sorts after the cursor for ever).
func (tr *triggerRun) skip(id any, why error) {
	key := fmt.Sprint(id) + "\x00" + why.Error()
	if tr.seenSkips[key] {
		return
	}
	if tr.seenSkips == nil || len(tr.seenSkips) > 10000 {
		tr.seenSkips = make(map[string]bool)
	}
	tr.seenSkips[key] = true
	tr.skipped++
	tr.lastSkip = fmt.Sprintf("document %v: %v", id, why)
	tr.q.log.Warn("a trigger skipped a version", "trigger", tr.t.Name, "document", id, "why", why)
}

// absent keeps the jobs of jobs that are not in the table yet (a job with a unique key
// is left to AddJob, whose rules it follows).
func (tr *triggerRun) absent(ctx context.Context, jobs []*job.Job) ([]*job.Job, error) {
	var ids []string
	for _, j := range jobs {
		if j.UniqueKey() == "" {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return jobs, nil
	}
	there, err := tr.q.db.ExistingIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []*job.Job
	for _, j := range jobs {
		if j.UniqueKey() != "" || !there[j.ID] {
			out = append(out, j)
		}
	}
	return out, nil
}

// timed runs query with ctx bounded by triggerQuery; a query that ran out of that time
// (not ctx's) met a connection gone silent: the session's connections are replaced.
func (tr *triggerRun) timed(ctx context.Context, query func(ctx context.Context) error) error {
	qctx, cancel := context.WithTimeout(ctx, triggerQuery)
	defer cancel()
	err := query(qctx)
	if err != nil && ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		tr.q.stalled()
	}
	return err
}
