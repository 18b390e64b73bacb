package main

import (
	"context"
	"errors"
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
// after (TIME in Unix nanoseconds).
func runWorker(ctx context.Context, addr, db, ledgerPath string, concurrency int, fail float64) error {
	l, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	defer l.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
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
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return q.Stop(stopCtx)
}
