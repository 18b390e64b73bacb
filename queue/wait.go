package queue

import (
	"context"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Wait returns the job with the given id once it is completed, cancelled or terminated,
// at once if it is already; read a completed job's handler result with j.Result. It
// follows the job's own changefeed, so it learns of an outcome written by any process
// (Go or Node.js) without polling, whether or not this queue processes jobs or has its
// table changefeed on.
//
// It returns an error wrapping job.ErrNotFound when the job is not in the queue or is
// removed before it finishes (a queue with RemoveFinishedJobsImmediately removes jobs as
// they finish: Wait then still sees the finished job, unless it started after the
// removal), ctx's error when ctx ends first, and ErrStopped when the queue stops.
func (q *Queue) Wait(ctx context.Context, id string) (*job.Job, error) {
	return public(q.e.Wait(ctx, id))
}
