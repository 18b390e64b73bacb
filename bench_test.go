package rjq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// BenchmarkProcess processes b.N jobs that are already in the queue, with a handler that
// does nothing, and measures the database round trips the queue makes per job through a
// counting proxy. On reqlite (no real indexes, one query at a time) jobs/s says little;
// queries/job is the figure that carries over to a real RethinkDB.
//
// Metrics: jobs/s; queries/job, every query frame the queue sent from Process to the last
// completion; claims and outcome-writes, the frames of the claim query and of the outcome
// update, told apart by keys only they carry; tail-claims, the claims sent after the last
// job was claimed, which can only come back empty (approximate: a claim sent while the
// last active event is on its way counts as before); other-queries, the rest (the review
// a queue that is not a Queue Master runs when Process starts); add-queries, what adding
// the b.N jobs in one AddJob cost (outside the timing).
func BenchmarkProcess(b *testing.B) {
	for _, c := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) { benchmarkProcess(b, c) })
	}
}

func benchmarkProcess(b *testing.B, concurrency int) {
	srv := testserver.Get(b) // skips without a server
	db := testserver.DB(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	proxy, err := wirecount.Start(srv.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	// Keys that only the claim query (claim.go) and the outcome update (outcome.go) send.
	// The Master's review also writes "dateFinished", but not "progress".
	claims := proxy.Tally(`"candidates"`)
	outcomes := proxy.Tally(`"dateFinished"`, `"progress"`)

	q, err := queue.New(ctx,
		&queue.ConnectOptions{Host: proxy.Host(), Port: proxy.Port(), DB: db},
		queuetest.Options(queue.Options{Concurrency: concurrency, MasterInterval: -1, NoChangeFeed: true}))
	if err != nil {
		b.Fatal(err)
	}
	// Stop first, proxy.Close after it (deferred earlier): the queue's connection must
	// still be up while Stop waits for its goroutines.
	defer func() {
		if err := q.Stop(context.Background()); err != nil {
			b.Errorf("stop: %v", err)
		}
	}()
	if err := q.Ready(ctx); err != nil {
		b.Fatal(err)
	}

	jobs := make([]*job.Job, b.N)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	proxy.Reset()
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		b.Fatal(err)
	}
	addQueries := proxy.Queries()

	// Subscribed before Process so that no completion is missed; errors end the run
	// instead of leaving it waiting for completions that will not come.
	events := q.Events(ctx, queue.EventActive, queue.EventCompleted, queue.EventError)
	proxy.Reset()
	b.ResetTimer()
	start := time.Now()
	if err := q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }); err != nil {
		b.Fatal(err)
	}
	active, claimsToLast := 0, uint64(0)
	for done := 0; done < b.N; {
		select {
		case e := <-events:
			switch e.Type {
			case queue.EventError:
				b.Fatalf("after %d of %d jobs: %v", done, b.N, e.Err)
			case queue.EventActive:
				if active++; active == b.N {
					claimsToLast = claims.Count()
				}
			case queue.EventCompleted:
				done++
			}
		case <-ctx.Done():
			b.Fatalf("%d of %d jobs completed before the time limit (%d events dropped)", done, b.N, q.DroppedEvents())
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	queries, nClaims, nOutcomes := proxy.Queries(), claims.Count(), outcomes.Count()

	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(queries)/n, "queries/job")
	b.ReportMetric(float64(nClaims), "claims")
	b.ReportMetric(float64(nClaims-claimsToLast), "tail-claims")
	b.ReportMetric(float64(nOutcomes), "outcome-writes")
	b.ReportMetric(float64(queries-nClaims-nOutcomes), "other-queries")
	b.ReportMetric(float64(addQueries), "add-queries")
}
