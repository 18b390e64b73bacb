package queue

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
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
	var groups []struct {
		Group     any `rethinkdb:"group"`
		Reduction int `rethinkdb:"reduction"`
	}
	if err := q.db.ReadAll(ctx, q.db.Term().GroupByIndex(dbinit.IndexStatus).Count(), &groups); err != nil {
		return Summary{}, fmt.Errorf("queue %s: summary: %w", q.cfg.name, err)
	}
	var s Summary
	for _, g := range groups {
		status, ok := g.Group.(string)
		if !ok {
			continue // the State Document has no status
		}
		s.Total += g.Reduction
		switch job.Status(status) {
		case job.Waiting:
			s.Waiting = g.Reduction
		case job.Active:
			s.Active = g.Reduction
		case job.Completed:
			s.Completed = g.Reduction
		case job.Cancelled:
			s.Cancelled = g.Reduction
		case job.Failed:
			s.Failed = g.Reduction
		case job.Terminated:
			s.Terminated = g.Reduction
		}
	}
	return s, nil
}
