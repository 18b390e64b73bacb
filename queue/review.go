package queue

import (
	"context"
)

// Review runs the Queue Master's review now, on any queue: active jobs whose dateEnable
// has passed (their worker crashed or hung) are failed, or terminated when no retry is
// left; finished jobs older than RemoveFinishedJobs are removed; the State Document is set
// to "reviewed", so every queue on the table claims again. This queue raises a local
// reviewed event and claims again too. A Queue Master runs it every MasterInterval.
func (q *Queue) Review(ctx context.Context) (ReviewResult, error) {
	res, err := q.e.Review(ctx)
	return ReviewResult(res), publicErr(err)
}
