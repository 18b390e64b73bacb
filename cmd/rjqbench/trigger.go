package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// -trigger measures a trigger (queue.Trigger) on a table of the user's, "docs", indexed
// by "updatedAt", in three parts:
//
//   - write → job start while the runner follows the table's changefeed, beside add →
//     start on the same idle queue, in rounds taken in turn (triggerlatency.go's method);
//   - what each version costs the server while the runner follows: server CPU and wire
//     queries, beside the writes alone and beside the writer adding each version's job
//     itself (triggercost.go);
//   - the catch-up of -trigger-versions versions written while no runner ran, and the
//     processing of the queue's other jobs during it beside before and after it
//     (triggercatchup.go).

// triggerWrites (-trigger-writes) is how many versions the writer writes in the first two
// parts; triggerPace (-trigger-pace) is the time between two writes; triggerVersions
// (-trigger-versions) is how many versions the catch-up reads (0: no catch-up); and
// triggerBacklog (-trigger-backlog) is the size of each batch of plain jobs processed
// before, during and after it.
var (
	triggerWrites, triggerVersions, triggerBacklog int
	triggerPace                                    time.Duration
	// triggerIdle (-trigger-idle) adds a catch-up with no other work, a run of its own.
	triggerIdle bool
	// triggerTurns (-trigger-turns) bounds the turns of plain jobs beside the catch-up
	// (0: until it has caught up); the runner finishes the rest alone.
	triggerTurns int
)

const (
	// triggerTable and triggerIndex are the watched table and its index on a time.
	triggerTable, triggerIndex = "docs", "updatedAt"
	// triggerName names the trigger of each measurement.
	triggerName = "bench"
	// triggerDocs is how many documents the writer writes in turn: its first write of each
	// inserts it, the others update it.
	triggerDocs = 50
)

// triggerRows makes the -trigger measurements and prints their tables.
func (b bench) triggerRows() {
	if triggerWrites > 0 {
		b.triggerLatencyRows(triggerWrites)
		b.triggerCostRows(triggerWrites)
	}
	if triggerVersions > 0 {
		b.triggerCatchUpRows(triggerVersions)
	}
}

// triggerQueue opens a ready queue on db at addr that is a Queue Master (which runs the
// triggers it declares), reviewing once an hour so that its reviews stay out of the
// measurements, and logging to logger.
func triggerQueue(ctx context.Context, addr, db string, opts queue.Options, logger *slog.Logger) (*queue.Queue, error) {
	host, port := splitAddr(addr)
	opts.DatabaseInitDelay = -1
	opts.MasterInterval = time.Hour
	opts.EventBuffer = 1 << 16
	opts.Logger = logger
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: host, Port: port, DB: db}, &opts)
	if err != nil {
		return nil, err
	}
	return q, q.Ready(ctx)
}

// userTable makes the watched table in db, with its index, and waits for the index.
func userTable(ctx context.Context, s *r.Session, db string) error {
	opts := r.RunOpts{Context: ctx}
	if _, err := r.DB(db).TableCreate(triggerTable).RunWrite(s, opts); err != nil {
		return fmt.Errorf("create %s.%s: %w", db, triggerTable, err)
	}
	if _, err := r.DB(db).Table(triggerTable).IndexCreate(triggerIndex).RunWrite(s, opts); err != nil {
		return fmt.Errorf("create the index %s: %w", triggerIndex, err)
	}
	cur, err := r.DB(db).Table(triggerTable).IndexWait(triggerIndex).Run(s, opts)
	if err != nil {
		return fmt.Errorf("wait for the index %s: %w", triggerIndex, err)
	}
	return cur.Close()
}

// writeVersion writes version w of the writer's documents: document w % triggerDocs,
// inserted or replaced, holding w and the server's time in updatedAt. It returns when
// the write was sent and when it was acknowledged.
func writeVersion(ctx context.Context, s *r.Session, db string, w int) (sent, acked time.Time, err error) {
	doc := map[string]any{"id": w % triggerDocs, "w": w, triggerIndex: r.Now()}
	sent = time.Now()
	_, err = r.DB(db).Table(triggerTable).Insert(doc, r.InsertOpts{Conflict: "update"}).RunWrite(s, r.RunOpts{Context: ctx})
	if err != nil {
		return sent, time.Time{}, fmt.Errorf("write version %d: %w", w, err)
	}
	return sent, time.Now(), nil
}

// pacedWrites writes versions from..to-1 one every triggerPace, calling wrote with each
// one's times.
func pacedWrites(ctx context.Context, s *r.Session, db string, from, to int, wrote func(w int, sent, acked time.Time)) error {
	tick := time.NewTicker(max(triggerPace, time.Millisecond))
	defer tick.Stop()
	for w := from; w < to; w++ {
		sent, acked, err := writeVersion(ctx, s, db, w)
		if err != nil {
			return err
		}
		wrote(w, sent, acked)
		if triggerPace > 0 {
			<-tick.C
		}
	}
	return nil
}

// versionW is the writer's number of a version, from its document or from the data of
// the job made of it; false for anything else.
func versionW(m any) (int, bool) {
	doc, ok := m.(map[string]any)
	if !ok {
		return 0, false
	}
	w, ok := doc["w"].(float64)
	return int(w), ok
}

// logWatch is the slog handler of the measurements' Queue Masters: it reports each
// "trigger caught up" line on caughtUp and prints the lines about triggers, warnings and
// errors on stderr.
type logWatch struct {
	caughtUp chan time.Time
}

// newLogWatch makes a logWatch and the logger that writes to it.
func newLogWatch() (*logWatch, *slog.Logger) {
	w := &logWatch{caughtUp: make(chan time.Time, 16)}
	return w, slog.New(w)
}

// Enabled keeps Info and above.
func (*logWatch) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// Handle reports a catch-up's end and prints warnings.
func (w *logWatch) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "trigger caught up" {
		select {
		case w.caughtUp <- rec.Time:
		default:
		}
	}
	if rec.Level >= slog.LevelWarn || strings.Contains(rec.Message, "trigger") {
		line := rec.Message
		rec.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		fmt.Fprintf(os.Stderr, "trigger bench: queue %s: %s\n", rec.Level, line)
	}
	return nil
}

// WithAttrs is the handler itself: the measurements give no attributes.
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }

// WithGroup is the handler itself.
func (w *logWatch) WithGroup(string) slog.Handler { return w }

// waitJobs polls q's trigger until it has made want jobs and its lag is zero, for up to
// bound; it returns its last stat.
func waitJobs(ctx context.Context, q *queue.Queue, want int64, bound time.Duration) (queue.TriggerStat, error) {
	deadline := time.Now().Add(bound)
	for {
		stats, err := q.Triggers(ctx)
		if err != nil {
			return queue.TriggerStat{}, err
		}
		var st queue.TriggerStat
		for _, s := range stats {
			if s.Name == triggerName {
				st = s
			}
		}
		if st.Jobs >= want && st.Lag == 0 {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("trigger made %d of %d jobs in %s (lag %s, last skip %q)", st.Jobs, want, bound, st.Lag, st.LastSkip)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startLedger keeps, for the trigger's jobs, when each version was written (sent,
// acknowledged, and the server's updatedAt the Job func saw) and when its job started.
type startLedger struct {
	mu      sync.Mutex
	times   map[int]*versionTimes
	started chan struct{} // one token per trigger job started
}

// versionTimes are the times of one version.
type versionTimes struct{ sent, acked, server, start time.Time }

// newStartLedger makes an empty ledger.
func newStartLedger() *startLedger {
	return &startLedger{times: make(map[int]*versionTimes), started: make(chan struct{}, 1<<16)}
}

// at is version w's times, made on first use (the caller holds mu).
func (l *startLedger) at(w int) *versionTimes {
	t := l.times[w]
	if t == nil {
		t = &versionTimes{}
		l.times[w] = t
	}
	return t
}

// wrote records version w's write.
func (l *startLedger) wrote(w int, sent, acked time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.at(w)
	t.sent, t.acked = sent, acked
}

// seen records the server's time of version w, the first time the Job func sees it.
func (l *startLedger) seen(w int, server time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.at(w); t.server.IsZero() {
		t.server = server
	}
}

// start records that version w's job started at.
func (l *startLedger) start(w int, at time.Time) {
	l.mu.Lock()
	t := l.at(w)
	first := t.start.IsZero()
	if first {
		t.start = at
	}
	l.mu.Unlock()
	if first {
		l.started <- struct{}{}
	}
}

// waitStarts waits for n more trigger jobs to start, for up to bound.
func (l *startLedger) waitStarts(n int, bound time.Duration) error {
	deadline := time.After(bound)
	for i := range n {
		select {
		case <-l.started:
		case <-deadline:
			return fmt.Errorf("%d of %d versions' jobs started within %s", i, n, bound)
		}
	}
	return nil
}

// latencies returns, over versions from..to-1, start − the server's time, start − sent
// and start − acknowledged.
func (l *startLedger) latencies(from, to int) (server, sent, acked []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := from; w < to; w++ {
		t := l.times[w]
		if t == nil || t.start.IsZero() {
			continue
		}
		server = append(server, t.start.Sub(t.server))
		sent = append(sent, t.start.Sub(t.sent))
		acked = append(acked, t.start.Sub(t.acked))
	}
	return server, sent, acked
}

// triggerJobFunc is the Job func of the first two parts: a job holding the version's w,
// whose server time it records in l (nil: none).
func triggerJobFunc(q *queue.Queue, l *startLedger) func(context.Context, map[string]any) (*job.Job, error) {
	return func(_ context.Context, doc map[string]any) (*job.Job, error) {
		w, ok := versionW(doc)
		if !ok {
			return nil, fmt.Errorf("document %v has no w", doc["id"])
		}
		if at, ok := doc[triggerIndex].(time.Time); ok && l != nil {
			l.seen(w, at)
		}
		return q.CreateJob(map[string]any{"w": w, "doc": doc["id"]}), nil
	}
}

// fatalf ends the run on a measurement's error.
func fatalf(format string, args ...any) { log.Fatalf(format, args...) }
