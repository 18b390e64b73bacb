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

// Children returns the jobs that have job id among their parents (job.SetDependsOn), of
// any status, oldest first, at most a thousand. A job's parents are its DependsOn, which
// GetJob reads.
func (q *Queue) Children(ctx context.Context, id string) ([]*job.Job, error) {
	return public(q.e.Children(ctx, id))
}
