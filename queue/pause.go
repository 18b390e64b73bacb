package queue

import (
	"context"
)

// Paused reports whether the queue is paused.
func (q *Queue) Paused() bool {
	return q.e.Paused()
}

// Pause stops the queue claiming jobs and returns once its running jobs have finished, or
// ctx has ended (they go on running then; the queue stays paused), or the queue was
// resumed meanwhile. With global true, every queue on the table is paused too, through the
// State Document. Events: pausing, then paused once the running jobs are done. A handler
// that pauses its own queue, passing its own ctx, is not waited for by that call: Pause
// then returns once the queue has stopped claiming, and paused follows when the running
// jobs, that handler's included, are done.
func (q *Queue) Pause(ctx context.Context, global bool) error {
	return publicErr(q.e.Pause(ctx, global))
}

// Resume makes a paused queue claim jobs again. With global true, every queue on the table
// resumes too, through the State Document. Event: resumed.
func (q *Queue) Resume(ctx context.Context, global bool) error {
	return publicErr(q.e.Resume(ctx, global))
}
