package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/metrics"
)

// A Collector is set as the queue's Options.Metrics and mounted at /metrics:
//
//	c := metrics.New()
//	q, err := queue.New(ctx, conn, &queue.Options{Metrics: c})
//	c.Watch(q) // its depth, read at each scrape
//	http.Handle("/metrics", c)
//
// Here it is fed by hand, as a queue would feed it.
func Example() {
	c := metrics.New()
	c.JobsClaimed("mail", 2)
	c.RunEnded("mail", job.Completed, 120*time.Millisecond)
	c.RunEnded("mail", job.Failed, 3*time.Second)

	var b strings.Builder
	c.WriteTo(context.Background(), &b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "rjq_jobs_claimed") || strings.HasPrefix(line, "rjq_runs") {
			fmt.Println(line)
		}
	}
	// Output:
	// rjq_jobs_claimed_total{queue="mail"} 2
	// rjq_runs_total{queue="mail",status="completed"} 1
	// rjq_runs_total{queue="mail",status="failed"} 1
}
