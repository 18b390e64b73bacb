package main

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// crossFloor is the floor of a cross-process add → start: the physical path and nothing
// else. A queue adds n jobs one at a time, 20 ms apart, as -cross does; a second
// connection follows the table's changefeed and, for each insert it sees, makes one
// guarded claim of that job by id (hard durability, as every write here). add → start is
// the time from AddJob to the claim's answer: an insert, a changefeed notification and a
// claim, with no process boundary, no ranking and no handler.
func crossFloor(ctx context.Context, addr string, n int) ([]time.Duration, error) {
	_, db, drop, err := scratch(addr)
	if err != nil {
		return nil, err
	}
	defer drop()
	adder, err := newQueue(ctx, addr, db, queue.Options{NoChangeFeed: true})
	if err != nil {
		return nil, err
	}
	defer adder.Stop(context.Background())
	s, err := r.Connect(r.ConnectOpts{Address: addr, Timeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	table := r.DB(db).Table(queue.DefaultName)
	feed, err := table.Changes().Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	claimed := make(chan error, 1)
	go func() {
		var c struct {
			New map[string]any `rethinkdb:"new_val"`
			Old map[string]any `rethinkdb:"old_val"`
		}
		for feed.Next(&c) {
			if c.Old != nil || c.New == nil {
				continue
			}
			claim := table.Get(c.New["id"]).Update(func(row r.Term) any {
				return r.Branch(row.Field("status").Eq("waiting"), map[string]any{
					"status": "active", "dateStarted": r.Now(), "processCount": row.Field("processCount").Add(1),
				}, nil)
			})
			res, err := writeOne(ctx, s, claim)
			if err == nil && res.Replaced != 1 {
				err = fmt.Errorf("crossFloor: claim replaced %d", res.Replaced)
			}
			claimed <- err
			c.New, c.Old = nil, nil
		}
	}()
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := adder.AddJob(ctx, adder.CreateJob(nil)); err != nil {
			return nil, err
		}
		select {
		case err := <-claimed:
			if err != nil {
				return nil, err
			}
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("crossFloor: no claim within 10 s")
		}
		out = append(out, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	return out, nil
}
