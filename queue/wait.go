package queue

import (
	"context"
	"errors"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
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
	ids, end, err := q.beginWithIDs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	defer end()
	// Stop must not wait for a Wait: the queue's life ends it.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(q.bg.Context(), func() { cancel(ErrStopped) })
	defer stop()

	cur, err := q.db.FollowJob(wctx, ids[0])
	if err != nil {
		return nil, q.waitErr(wctx, ids[0], err)
	}
	defer cur.Close()
	var change r.ChangeResponse
	for cur.Next(&change) {
		doc, ok := change.NewValue.(map[string]any)
		change = r.ChangeResponse{}
		if !ok {
			return nil, fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.name, ids[0], job.ErrNotFound)
		}
		status, _ := doc["status"].(string)
		if !job.Status(status).Finished() {
			continue
		}
		j, err := rdb.FromDocument(q.store(), doc)
		if err != nil {
			return nil, fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.name, ids[0], err)
		}
		return j, nil
	}
	return nil, q.waitErr(wctx, ids[0], cur.Err())
}

// waitErr is the error of a Wait that ended without the job finishing.
func (q *Queue) waitErr(ctx context.Context, id string, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, ErrStopped) {
			return ErrStopped
		}
		return ctx.Err()
	}
	if err == nil {
		err = errors.New("the changefeed ended")
	}
	return fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.name, id, dberr.From(ctx, err))
}
