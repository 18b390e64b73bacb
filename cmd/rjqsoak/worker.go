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
// table too (see declareOrders).
func runWorker(ctx context.Context, addr, db, ledgerPath string, concurrency int, fail float64, triggers bool) error {
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
	pid := strconv.Itoa(os.Getpid())
	err = q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		pc := strconv.Itoa(j.ProcessCount)
		stamp := func() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }
		if err := l.write("start", j.ID, pc, pid, stamp()); err != nil {
			return nil, err
		}
		select {
		case <-time.After(5*time.Millisecond + rand.N(45*time.Millisecond)):
		case <-ctx.Done():
			l.write("end", j.ID, pc, pid, "cancelled", stamp())
			return nil, context.Cause(ctx)
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
	})
	if err != nil {
		return err
	}
	if triggers {
		if err := declareOrders(ctx, q); err != nil {
			return err
		}
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return q.Stop(stopCtx)
}

// declareOrders declares the trigger of the orders table, again each second while a
// fault keeps it from being stored, until ctx ends: its job is named "order", with the
// document's id and version {doc, v} as payload, and retries enough that a handler's
// failures do not end it.
func declareOrders(ctx context.Context, q *queue.Queue) error {
	t := queue.Trigger{Name: ordersTrigger, Table: ordersTable, Index: ordersIndex,
		Job: func(_ context.Context, doc map[string]any) (*job.Job, error) {
			return q.CreateJob(map[string]any{"doc": doc["id"], "v": doc["v"]}).SetName(orderJobName).
				SetRetryMax(10).SetRetryDelay(time.Second), nil
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
