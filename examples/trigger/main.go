// Command trigger turns the changes of a table of yours into jobs: every version of an
// order gets one job, also an order written while no worker ran (the trigger catches up
// from its cursor when it starts), and a worker runs them.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/trigger
//
// RJQ_ADDR=host:port points it at another server.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// RJQ_ADDR=host:port names the server; empty, localhost:28015.
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// change is the payload of the jobs named "order-changed".
type change struct {
	Order  string `json:"order"`
	Status string `json:"status"`
}

var orderChanged = queue.NewKind[change]("order-changed")

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer) (err error) {
	db := cmp.Or(cxn.DB, "rjqJobQueue")
	s, err := r.Connect(r.ConnectOpts{Address: address(cxn), Database: db})
	if err != nil {
		return err
	}
	defer s.Close()
	orders, err := ordersTable(s, db)
	if err != nil {
		return err
	}
	// Written before any worker runs: the trigger catches up when it starts.
	if err := write(orders, s, "o1", "placed"); err != nil {
		return err
	}

	q, err := queue.New(ctx, cxn, &queue.Options{Name: "order_events"}) // a Queue Master, as by default
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()
	ran := make(chan change, 8)
	mux := queue.NewMux()
	orderChanged.Handle(mux, func(_ context.Context, _ *job.Job, c change) (any, error) {
		ran <- c
		return nil, nil
	})
	if err := q.Process(mux.Handler()); err != nil {
		return err
	}
	err = q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt",
		Job: func(_ context.Context, doc map[string]any) (*job.Job, error) {
			id, _ := doc["id"].(string)
			status, _ := doc["status"].(string)
			return orderChanged.Job(q, change{Order: id, Status: status}), nil
		}})
	if err != nil {
		return err
	}
	if err := follow(ctx, orders, s, ran, out); err != nil {
		return err
	}
	return report(ctx, q, out)
}

// follow prints the job of the order written before, then writes two more versions and
// prints theirs.
func follow(ctx context.Context, orders r.Term, s *r.Session, ran <-chan change, out io.Writer) error {
	for _, next := range []change{{}, {Order: "o1", Status: "paid"}, {Order: "o2", Status: "placed"}} {
		if next.Order != "" {
			if err := write(orders, s, next.Order, next.Status); err != nil {
				return err
			}
		}
		select {
		case c := <-ran:
			fmt.Fprintf(out, "job: order %s is %s\n", c.Order, c.Status)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// report prints what Triggers says of the trigger, once its runner has recorded the three
// jobs (it records its progress every second) and caught up: its Lag, the age of the
// oldest version past its cursor, is zero (the metric rjq_trigger_lag_seconds).
func report(ctx context.Context, q *queue.Queue, out io.Writer) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		stats, err := q.Triggers(ctx)
		if err != nil {
			return err
		}
		if s := stats[0]; s.Jobs == 3 && s.Lag == 0 {
			fmt.Fprintf(out, "trigger %s on table %s: %d jobs, run here: %v, caught up\n",
				s.Name, s.Table, s.Jobs, s.Runner == q.ID())
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ordersTable makes the table of orders and its index on updatedAt, when missing.
func ordersTable(s *r.Session, db string) (r.Term, error) {
	_ = r.DBCreate(db).Exec(s) // there already, or made here
	orders := r.DB(db).Table("orders")
	if err := r.DB(db).TableCreate("orders").Exec(s); err != nil && !isExists(err) {
		return orders, err
	}
	if err := orders.IndexCreate("updatedAt").Exec(s); err != nil && !isExists(err) {
		return orders, err
	}
	return orders, orders.IndexWait().Exec(s)
}

// write writes the order id with its status, stamped with the server's time: the index
// every write raises.
func write(orders r.Term, s *r.Session, id, status string) error {
	return orders.Insert(map[string]any{"id": id, "status": status, "updatedAt": r.Now()},
		r.InsertOpts{Conflict: "replace"}).Exec(s)
}

func isExists(err error) bool { return strings.Contains(err.Error(), "already exists") }

// address is the server cxn names.
func address(cxn *queue.ConnectOptions) string {
	if cxn.Address != "" {
		return cxn.Address
	}
	return net.JoinHostPort(cmp.Or(cxn.Host, "localhost"), strconv.Itoa(cmp.Or(cxn.Port, 28015)))
}
