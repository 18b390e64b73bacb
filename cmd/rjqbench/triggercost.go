package main

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// costPhase is what one phase of the cost part measured over its n versions: the
// server's CPU, and (in a counted run) the queue's queries, of which the CONTINUEs (the
// driver's requests for a cursor's next batch: the trigger's feed) and the trigger's
// progress records.
type costPhase struct {
	name                        string
	n                           int
	cpu                         time.Duration
	queries, continues, records uint64
}

// triggerCostRows measures what each version costs while the runner follows, beside the
// writes alone and the writer adding each version's job itself, and prints it; queries
// are counted in a run of their own through a counting proxy (-count).
func (b bench) triggerCostRows(n int) {
	timed, err := measureTriggerCost(b.ctx, b.addr, n, b.cpu, nil)
	if err != nil {
		fatalf("trigger cost: %v", err)
	}
	var counted []costPhase
	if countWanted {
		proxy, err := wirecount.Start(b.addr)
		if err != nil {
			fatalf("trigger cost: %v", err)
		}
		counted, err = measureTriggerCost(b.ctx, b.addr, n, cpuMeter{}, proxy)
		proxy.Close()
		if err != nil {
			fatalf("trigger cost, counted: %v", err)
		}
	}
	fmt.Printf("\n| trigger: what a version costs while following (%d writes, one every %s; queue without changefeed, no processing) | server CPU a version | beyond the writes alone | queries a version | beyond the writes alone | feed batches (CONTINUE) a version | progress records a version |\n| --- | --- | --- | --- | --- | --- | --- |\n", n, triggerPace)
	for i, ph := range timed {
		fmt.Printf("| %s | %s | %s |", ph.name, perJob(ph.cpu, ph.n), perJob(ph.cpu-timed[0].cpu, ph.n))
		if i < len(counted) {
			c, base := counted[i], counted[0]
			fmt.Printf(" %.2f | %.2f | %.3f | %.3f |", perVersion(c.queries, c.n), perVersion(c.queries, c.n)-perVersion(base.queries, base.n),
				perVersion(c.continues, c.n), perVersion(c.records, c.n))
		} else {
			fmt.Printf(" | | | |")
		}
		fmt.Println()
	}
	if len(timed) == 3 {
		base := timed[0].cpu
		fmt.Printf("| the trigger's extra ÷ AddJob's extra (server CPU) | %s | | | | | |\n",
			ratio(float64(timed[2].cpu-base), float64(timed[1].cpu-base)))
	}
}

// perVersion is count ÷ n.
func perVersion(count uint64, n int) float64 { return float64(count) / float64(max(n, 1)) }

// measureTriggerCost writes n versions at triggerPace three times on one queue that is a
// Queue Master (no changefeed, no processing): alone, then each followed by the writer's
// own AddJob of the job the trigger would make, then with the trigger following. With
// proxy, the queue's queries go through it and are counted (the writer's are not); cpu
// then measures nothing.
func measureTriggerCost(ctx context.Context, addr string, n int, cpu cpuMeter, proxy *wirecount.Proxy) ([]costPhase, error) {
	s, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	qaddr := addr
	if proxy != nil {
		qaddr = proxy.Addr()
	}
	_, logger := newLogWatch()
	q, err := triggerQueue(ctx, qaddr, db, queue.Options{NoChangeFeed: true}, logger)
	if err != nil {
		return nil, err
	}
	defer q.Stop(context.Background())
	if err := userTable(ctx, s, db); err != nil {
		return nil, err
	}
	var records *wirecount.Tally
	if proxy != nil {
		records = proxy.Tally(`"lagAt"`) // RecordTrigger's update sets it
	}
	phase := func(name string, run func() error) (costPhase, error) {
		cpu.settle()
		if proxy != nil {
			proxy.Reset()
		}
		used := cpu.span()
		if err := run(); err != nil {
			return costPhase{}, fmt.Errorf("%s: %w", name, err)
		}
		ph := costPhase{name: name, n: n, cpu: used()}
		if proxy != nil {
			ph.queries, ph.continues, ph.records = proxy.Queries(), proxy.Continues(), records.Count()
		}
		return ph, nil
	}
	return costPhases(ctx, s, db, q, n, phase)
}

// costPhases runs the cost part's three phases on q through phase.
func costPhases(ctx context.Context, s *r.Session, db string, q *queue.Queue, n int, phase func(string, func() error) (costPhase, error)) ([]costPhase, error) {
	ignore := func(int, time.Time, time.Time) {}
	alone, err := phase("writes alone (no trigger)", func() error { return pacedWrites(ctx, s, db, 0, n, ignore) })
	if err != nil {
		return nil, err
	}
	var addErr error
	addEach := func(w int, _, _ time.Time) {
		if addErr == nil {
			_, addErr = q.AddJob(ctx, q.CreateJob(map[string]any{"w": w, "doc": w % triggerDocs}))
		}
	}
	added, err := phase("writes, each version's job added by the writer (AddJob, no trigger)", func() error {
		if err := pacedWrites(ctx, s, db, n, 2*n, addEach); err != nil {
			return err
		}
		return addErr
	})
	if err != nil {
		return nil, err
	}
	if err := q.AddTrigger(ctx, queue.Trigger{Name: triggerName, Table: triggerTable, Index: triggerIndex, Job: triggerJobFunc(q, nil)}); err != nil {
		return nil, err
	}
	events := q.Events(ctx, queue.EventAdded)
	waitAdded := func(k int) error {
		deadline := time.After(60 * time.Second)
		for i := range k {
			select {
			case <-events:
			case <-deadline:
				return fmt.Errorf("the trigger added %d of %d jobs within 60 s", i, k)
			}
		}
		return nil
	}
	// A first version whose job lands: the runner follows.
	if err := pacedWrites(ctx, s, db, 2*n, 2*n+1, ignore); err != nil {
		return nil, err
	}
	if err := waitAdded(1); err != nil {
		return nil, err
	}
	followed, err := phase("writes followed by the trigger (its feed, existence check, AddJob, progress)", func() error {
		if err := pacedWrites(ctx, s, db, 2*n+1, 3*n+1, ignore); err != nil {
			return err
		}
		return waitAdded(n)
	})
	if err != nil {
		return nil, err
	}
	return []costPhase{alone, added, followed}, nil
}
