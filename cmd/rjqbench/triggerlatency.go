package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// triggerRounds is how many rounds the latency part takes in turn: each adds n/rounds
// jobs one at a time (add → start), then writes n/rounds versions (write → start).
const triggerRounds = 5

// triggerLatency is what the latency part measured.
type triggerLatency struct {
	// add is add → start on the queue that runs the trigger, idle; server, sent and acked
	// are write → start, from the server's updatedAt, from when the write was sent and
	// from when it was acknowledged.
	add, server, sent, acked []time.Duration
}

// triggerLatencyRows measures write → start and add → start over n samples each, and
// prints them.
func (b bench) triggerLatencyRows(n int) {
	res, err := measureTriggerLatency(b.ctx, b.addr, n)
	if err != nil {
		fatalf("trigger latency: %v", err)
	}
	fmt.Printf("\n| trigger: write → job start while following (%d writes, one every %s; add → start on the same idle queue, %d jobs, in %d rounds in turn) | p50 | p99 |\n| --- | --- | --- |\n",
		len(res.server), triggerPace, len(res.add), triggerRounds)
	row := func(name string, ds []time.Duration) {
		fmt.Printf("| %s | %s | %s |\n", name, ms(pct(ds, 50)), ms(pct(ds, 99)))
	}
	row("write → start, from the server's updatedAt (r.now() of the write)", res.server)
	row("write → start, from when the write was sent", res.sent)
	row("write → start, from when the write was acknowledged", res.acked)
	row("add → start, the same queue, idle", res.add)
	fmt.Printf("| write (server's updatedAt) → start ÷ add → start | %s | %s |\n",
		ratio(float64(pct(res.server, 50)), float64(pct(res.add, 50))), ratio(float64(pct(res.server, 99)), float64(pct(res.add, 99))))
	fmt.Printf("| write (sent) → start ÷ add → start | %s | %s |\n",
		ratio(float64(pct(res.sent, 50)), float64(pct(res.add, 50))), ratio(float64(pct(res.sent, 99)), float64(pct(res.add, 99))))
}

// measureTriggerLatency opens a Queue Master that processes (changefeed on, the
// default) and runs a trigger on a table of its database, then in turns adds jobs one at
// a time (add → start, as -latency does) and writes versions one every triggerPace
// without waiting for their jobs (write → start).
func measureTriggerLatency(ctx context.Context, addr string, n int) (triggerLatency, error) {
	var res triggerLatency
	s, db, drop, err := scratch(addr)
	if err != nil {
		return res, err
	}
	defer drop()
	_, logger := newLogWatch()
	q, err := triggerQueue(ctx, addr, db, queue.Options{}, logger)
	if err != nil {
		return res, err
	}
	defer q.Stop(context.Background())
	if err := userTable(ctx, s, db); err != nil {
		return res, err
	}
	ledger := newStartLedger()
	plain := make(chan time.Time, 1)
	if err := q.Process(func(_ context.Context, j *job.Job) (any, error) {
		now := time.Now()
		if w, ok := versionW(j.Data); ok {
			ledger.start(w, now)
		} else {
			plain <- now
		}
		return nil, nil
	}); err != nil {
		return res, err
	}
	t := queue.Trigger{Name: triggerName, Table: triggerTable, Index: triggerIndex, Job: triggerJobFunc(q, ledger)}
	if err := q.AddTrigger(ctx, t); err != nil {
		return res, err
	}
	// A first version whose job starts: the runner follows.
	if err := pacedWrites(ctx, s, db, -1, 0, ledger.wrote); err != nil {
		return res, err
	}
	if err := ledger.waitStarts(1, 30*time.Second); err != nil {
		return res, fmt.Errorf("the trigger's first job: %w", err)
	}
	per := max(n/triggerRounds, 1)
	for w := 0; w < n; w += per {
		adds, err := addStarts(ctx, q, plain, per)
		if err != nil {
			return res, err
		}
		res.add = append(res.add, adds...)
		to := min(w+per, n)
		if err := pacedWrites(ctx, s, db, w, to, ledger.wrote); err != nil {
			return res, err
		}
		if err := ledger.waitStarts(to-w, 30*time.Second); err != nil {
			return res, err
		}
	}
	res.server, res.sent, res.acked = ledger.latencies(0, n)
	return res, nil
}
