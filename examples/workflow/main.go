// Command workflow runs a fan-out / fan-in workflow: one job splits a report into parts,
// a job per part renders it (all at once, on any worker), and a last job, which waits
// for every part, joins their results. Nothing polls: each job starts the moment the
// changefeed shows its last parent completed.
//
// Start RethinkDB first (`docker compose up -d` in the repository), then:
//
//	go run ./examples/workflow
//
// RJQ_ADDR=host:port points it at another server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cxn := &queue.ConnectOptions{Address: os.Getenv("RJQ_ADDR")}
	if err := run(ctx, cxn, os.Stdout, 4); err != nil {
		log.Fatal(err)
	}
}

// step is a job's data: what to do, and for render, which part.
type step struct {
	Do   string `json:"do"`
	Part int    `json:"part"`
}

// run processes the workflow of parts render jobs on the queue "reports" and prints
// what the join made of them.
func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer, parts int) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "reports", Concurrency: parts})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	if err := q.Process(handler(parts)); err != nil {
		return err
	}

	// The whole workflow in one AddJob: parents and children in any order.
	jobs, join := workflow(q, parts)
	events := q.Events(ctx, queue.EventReleased, queue.EventCompleted)
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return err
	}
	return report(ctx, q, events, join, out)
}

// handler runs each step: split says how many parts, render renders its part from the
// split's result, join joins the results of every render.
func handler(parts int) queue.Handler {
	return func(ctx context.Context, j *job.Job) (any, error) {
		var s step
		if err := j.DataAs(&s); err != nil {
			return nil, err
		}
		switch s.Do {
		case "split":
			return fmt.Sprintf("%d parts", parts), nil
		case "render":
			var split string
			if err := j.ParentResult(j.DependsOn()[0], &split); err != nil {
				return nil, err
			}
			return fmt.Sprintf("part %d of %s", s.Part, split), nil
		case "join":
			var all []string
			for _, id := range j.DependsOn() { // in the order given to SetDependsOn
				var part string
				if err := j.ParentResult(id, &part); err != nil {
					return nil, err
				}
				all = append(all, part)
			}
			return strings.Join(all, "; "), nil
		}
		return nil, fmt.Errorf("unknown step %q", s.Do)
	}
}

// workflow creates the jobs of the workflow: a split, a render of each part that
// depends on it, and a join that depends on every render, which it returns too.
func workflow(q *queue.Queue, parts int) (jobs []*job.Job, join *job.Job) {
	split := q.CreateJob(step{Do: "split"})
	jobs = []*job.Job{split}
	var renders []string
	for i := 1; i <= parts; i++ {
		r := q.CreateJob(step{Do: "render", Part: i}).SetDependsOn(split.ID)
		jobs = append(jobs, r)
		renders = append(renders, r.ID)
	}
	join = q.CreateJob(step{Do: "join"}).SetDependsOn(renders...)
	return append(jobs, join), join
}

// report counts the jobs released until join completes, then prints that count and
// join's result to out.
func report(ctx context.Context, q *queue.Queue, events <-chan queue.Event, join *job.Job, out io.Writer) error {
	released := 0
	for {
		select {
		case e := <-events:
			switch {
			case e.Type == queue.EventReleased:
				released++
			case e.Type == queue.EventCompleted && e.JobID == join.ID:
				done, err := q.GetJob(ctx, join.ID)
				if err != nil {
					return err
				}
				var joined string
				if err := done[0].Result(&joined); err != nil {
					return err
				}
				fmt.Fprintf(out, "%d jobs released as their parents completed\njoined: %s\n", released, joined)
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
