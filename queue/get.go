package queue

import (
	"context"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// GetJob returns the jobs with the given ids, in the order given (repeats dropped). When
// some ids are not in the queue it returns the jobs it found and an error wrapping
// job.ErrNotFound that names the missing ids.
func (q *Queue) GetJob(ctx context.Context, ids ...string) ([]*job.Job, error) {
	return public(q.e.GetJob(ctx, ids...))
}
