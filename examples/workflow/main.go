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

func run(ctx context.Context, cxn *queue.ConnectOptions, out io.Writer, parts int) (err error) {
	q, err := queue.New(ctx, cxn, &queue.Options{Name: "reports", Concurrency: parts})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, q.Stop(ctx)) }()

	err = q.Process(func(ctx context.Context, j *job.Job) (any, error) {
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
	})
	if err != nil {
		return err
	}

	// The whole workflow in one AddJob: parents and children in any order.
	split := q.CreateJob(step{Do: "split"})
	jobs := []*job.Job{split}
	var renders []string
	for i := 1; i <= parts; i++ {
		r := q.CreateJob(step{Do: "render", Part: i}).SetDependsOn(split.ID)
		jobs = append(jobs, r)
		renders = append(renders, r.ID)
	}
	join := q.CreateJob(step{Do: "join"}).SetDependsOn(renders...)
	jobs = append(jobs, join)

	events := q.Events(ctx, queue.EventReleased, queue.EventCompleted)
	if _, err := q.AddJob(ctx, jobs...); err != nil {
		return err
	}
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
				var report string
				if err := done[0].Result(&report); err != nil {
					return err
				}
				fmt.Fprintf(out, "%d jobs released as their parents completed\njoined: %s\n", released, report)
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
