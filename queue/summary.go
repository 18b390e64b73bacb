package queue

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Summary counts the queue's jobs by status.
type Summary struct {
	Waiting    int
	Active     int
	Completed  int
	Cancelled  int
	Failed     int
	Terminated int
	// Total counts every job, including those with a status of none of the above (a job
	// "disabled" by setting an unknown status, for one).
	Total int
}

// Summary counts the queue's jobs by status, with one grouped count on the status index.
func (q *Queue) Summary(ctx context.Context) (Summary, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return Summary{}, err
	}
	defer end()
	counts, err := q.db.CountByStatus(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("queue %s: summary: %w", q.cfg.name, err)
	}
	s := Summary{
		Waiting: counts[job.Waiting], Active: counts[job.Active], Completed: counts[job.Completed],
		Cancelled: counts[job.Cancelled], Failed: counts[job.Failed], Terminated: counts[job.Terminated],
	}
	for _, n := range counts {
		s.Total += n
	}
	return s, nil
}
