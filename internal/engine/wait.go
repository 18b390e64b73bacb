package engine

import (
	"context"
	"errors"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/dberr"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Wait is queue.Queue.Wait, whose doc says what it does.
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
			return nil, fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.Name, ids[0], job.ErrNotFound)
		}
		status, _ := doc["status"].(string)
		if !job.Status(status).Finished() {
			continue
		}
		j, err := rdb.FromDocument(q.store(), doc)
		if err != nil {
			return nil, fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.Name, ids[0], err)
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
	return fmt.Errorf("queue %s: wait for job %s: %w", q.cfg.Name, id, dberr.From(ctx, err))
}
