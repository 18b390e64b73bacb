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

// With NameLabels and GroupLabels, the run series carry the job's name and group: the
// first names and groups seen, every later one as "other", a job without a group as "".
// A queue gives both (queue.GroupMetrics); here they are given by hand.
func ExampleNewWith() {
	c := metrics.NewWith(metrics.Options{NameLabels: 10, GroupLabels: 1})
	c.RunEndedGrouped("mail", "welcome", "acme", job.Completed, 120*time.Millisecond)
	c.RunEndedGrouped("mail", "welcome", "globex", job.Completed, 80*time.Millisecond)
	c.RunEndedGrouped("mail", "digest", "", job.Failed, time.Second)

	var b strings.Builder
	c.WriteTo(context.Background(), &b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "rjq_runs") {
			fmt.Println(line)
		}
	}
	// Output:
	// rjq_runs_total{queue="mail",name="digest",group="",status="failed"} 1
	// rjq_runs_total{queue="mail",name="welcome",group="acme",status="completed"} 1
	// rjq_runs_total{queue="mail",name="welcome",group="other",status="completed"} 1
}
