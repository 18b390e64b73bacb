package main

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/bulk"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// bulkResult is what -bulk measured: processing at C=50 alone and while an operator's
// bulk remove (rjq remove --status completed, the dashboard's remove all) deletes n
// finished jobs, and that removal.
type bulkResult struct {
	alone, during float64
	removed       int
	took          time.Duration
}

// measureBulk fills n finished jobs, then processes scaleJobs jobs at C=50 alone and
// again while bulk.Remove deletes the finished ones, which it waits for.
func measureBulk(ctx context.Context, addr string, n int) (bulkResult, error) {
	var res bulkResult
	s, db, q, done, err := filledTable(ctx, addr, n)
	if err != nil {
		return res, err
	}
	defer done()
	events := q.Events(ctx, queue.EventCompleted, queue.EventError)
	if err := q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		return res, err
	}
	if res.alone, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return res, err
	}
	// The filled jobs only: those the batch finished are newer than the cutoff.
	cutoff := time.Now().Add(-time.Minute)
	removed := make(chan error, 1)
	start := time.Now()
	go func() {
		var err error
		res.removed, err = bulk.Remove(ctx, s, r.DB(db).Table(queue.DefaultName), bulk.Filter{Status: string(job.Completed)}, cutoff, nil)
		res.took = time.Since(start)
		removed <- err
	}()
	if res.during, err = processBatch(ctx, q, events, scaleJobs); err != nil {
		return res, err
	}
	if err := <-removed; err != nil {
		return res, fmt.Errorf("bulk remove: %w", err)
	}
	return res, nil
}

// bulkRows prints -bulk's table.
func bulkRows(ctx context.Context, addr string, n int) {
	res, err := measureBulk(ctx, addr, n)
	if err != nil {
		fmt.Printf("| bulk remove of %d finished jobs | error: %v |\n", n, err)
		return
	}
	fmt.Printf("\n| finished jobs | process C=50 alone, jobs/s | while a bulk remove runs, jobs/s | ratio | removed | its time |\n| --- | --- | --- | --- | --- | --- |\n")
	fmt.Printf("| %d | %.0f | %.0f | %.2f | %d | %s |\n", n, res.alone, res.during, res.during/res.alone, res.removed, res.took.Round(time.Second))
}
