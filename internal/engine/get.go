package engine

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// GetJob is queue.Queue.GetJob, whose doc says what it does.
func (q *Queue) GetJob(ctx context.Context, ids ...string) ([]*job.Job, error) {
	ids, end, err := q.beginWithIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer end()
	jobs, err := q.db.GetJobs(ctx, q.store(), ids)
	if err != nil {
		return nil, fmt.Errorf("queue %s: get jobs: %w", q.cfg.Name, err)
	}
	byID := make(map[string]*job.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	ordered := make([]*job.Job, 0, len(ids))
	var missing []string
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			ordered = append(ordered, j)
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return ordered, fmt.Errorf("%w: %v", job.ErrNotFound, missing)
	}
	return ordered, nil
}
