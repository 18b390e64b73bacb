package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// queueName is the soak's queue.
const queueName = "soak"

// runProducer adds jobs at rate a second until ctx ends, each appended to the ledger once
// AddJob has acknowledged it. An add that fails is tried again with the same job (same
// id) until it is acknowledged or found there already.
func runProducer(ctx context.Context, addr, db, ledgerPath string, rate float64, adders int) error {
	l, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	defer l.Close()
	q, err := queue.New(context.Background(), &queue.ConnectOptions{Address: addr, DB: db},
		&queue.Options{Name: queueName, NoChangeFeed: true, MasterInterval: -1, DatabaseInitDelay: -1})
	if err != nil {
		return err
	}
	defer q.Stop(context.Background())
	var mu sync.Mutex // the ledger
	jobs := make(chan *job.Job)
	var wg sync.WaitGroup
	for range adders {
		wg.Go(func() {
			for j := range jobs {
				if err := addUntilAcknowledged(q, j); err != nil {
					fmt.Println("producer:", err)
					continue
				}
				mu.Lock()
				err := l.write("added", j.ID, strconv.Itoa(j.RetryMax))
				mu.Unlock()
				if err != nil {
					fmt.Println("producer: ledger:", err)
				}
			}
		})
	}
	priorities := []job.Priority{job.Low, job.Normal, job.High, job.Highest}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			close(jobs)
			wg.Wait()
			return nil
		case <-tick.C:
		}
		j := q.CreateJob(map[string]any{"n": n}).SetName("soak").
			SetPriority(priorities[n%len(priorities)]).
			SetRetryMax(rand.N(4)).SetRetryDelay(time.Second)
		if rand.N(10) == 0 {
			j.SetDateEnable(time.Now().Add(time.Second + rand.N(4*time.Second)))
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
		}
	}
}

// addUntilAcknowledged adds j, again after each failure, until AddJob succeeds or says
// that j is in the table already (an earlier try landed).
func addUntilAcknowledged(q *queue.Queue, j *job.Job) error {
	deadline := time.Now().Add(5 * time.Minute)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := q.AddJob(ctx, j)
		cancel()
		switch {
		case err == nil, errors.Is(err, job.ErrExists):
			return nil
		case errors.Is(err, job.ErrInvalid):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("job %s not added after 5 minutes: %w", j.ID, err)
		}
		time.Sleep(wait)
	}
}
