package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// runWorker processes the soak's jobs until ctx ends (SIGTERM), then stops its queue.
// Each run appends "start ID PC PID TIME" before its work and "end ID PC PID ok|fail TIME"
// after (TIME in Unix nanoseconds). With triggers, it declares the trigger of the orders
// table too (see declareOrders), and its start lines end with "NAME DOC V" for the
// trigger's jobs and their children; with features, the handler of an order's job that
// has a child adds it (see addChild).
func runWorker(ctx context.Context, addr, db, ledgerPath string, concurrency int, fail float64, triggers, features bool) error {
	l, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	defer l.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if triggers {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	q, err := queue.New(context.Background(), &queue.ConnectOptions{Address: addr, DB: db}, &queue.Options{
		Name: queueName, Concurrency: concurrency, MasterInterval: 10 * time.Second, DatabaseInitDelay: -1,
		Logger: logger,
	})
	if err != nil {
		return err
	}
	if err := q.Process(handler(q, l, fail, features)); err != nil {
		return err
	}
	if triggers {
		if err := declareOrders(ctx, q, features); err != nil {
			return err
		}
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return q.Stop(stopCtx)
}

// handler is the workers' handler: it ledgers each run (see runWorker), works for 5 to
// 50 ms, and fails fail of its runs; with features, it adds the child of an order's job
// whose document has one.
func handler(q *queue.Queue, l *ledgerFile, fail float64, features bool) queue.Handler {
	pid := strconv.Itoa(os.Getpid())
	return func(ctx context.Context, j *job.Job) (any, error) {
		pc := strconv.Itoa(j.ProcessCount)
		stamp := func() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }
		var d struct {
			Doc string `json:"doc"`
			V   int    `json:"v"`
		}
		line := []string{"start", j.ID, pc, pid, stamp()}
		if j.Name == orderJobName || j.Name == shipJobName {
			if err := j.DataAs(&d); err == nil {
				line = append(line, j.Name, d.Doc, strconv.Itoa(d.V))
			}
		}
		if err := l.write(line...); err != nil {
			return nil, err
		}
		select {
		case <-time.After(5*time.Millisecond + rand.N(45*time.Millisecond)):
		case <-ctx.Done():
			l.write("end", j.ID, pc, pid, "cancelled", stamp())
			return nil, context.Cause(ctx)
		}
		if features && j.Name == orderJobName && featuresOf(d.Doc).child {
			if err := addChild(ctx, q, j, d.Doc, d.V); err != nil {
				l.write("end", j.ID, pc, pid, "fail", stamp())
				return nil, err
			}
		}
		if rand.Float64() < fail {
			if err := l.write("end", j.ID, pc, pid, "fail", stamp()); err != nil {
				return nil, err
			}
			return nil, errors.New("the soak's handler fails this run")
		}
		if err := l.write("end", j.ID, pc, pid, "ok", stamp()); err != nil {
			return nil, err
		}
		return "ok", nil
	}
}

// declareOrders declares the trigger of the orders table, again each second while a
// fault keeps it from being stored, until ctx ends: its job is named "order", with the
// document's id and version {doc, v} as payload, and retries enough that a handler's
// failures do not end it; with features, it has its document's (withFeatures).
func declareOrders(ctx context.Context, q *queue.Queue, features bool) error {
	t := queue.Trigger{Name: ordersTrigger, Table: ordersTable, Index: ordersIndex,
		Job: func(_ context.Context, doc map[string]any) (*job.Job, error) {
			j := q.CreateJob(map[string]any{"doc": doc["id"], "v": doc["v"]}).SetName(orderJobName).
				SetRetryMax(10).SetRetryDelay(time.Second)
			if id, _ := doc["id"].(string); features {
				withFeatures(j, id)
			}
			return j, nil
		}}
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := q.AddTrigger(actx, t)
		cancel()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, job.ErrInvalid) {
			return fmt.Errorf("declare the trigger: %w", err)
		}
		fmt.Fprintln(os.Stderr, "worker: declare the trigger (trying again):", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
