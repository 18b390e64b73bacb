package engine

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// FindJob is queue.Queue.FindJob, whose doc says what it does.
func (q *Queue) FindJob(ctx context.Context, predicate any) ([]*job.Job, error) {
	var filter any
	switch p := predicate.(type) {
	case map[string]any:
		if p == nil {
			return nil, ErrInvalidPredicate
		}
		filter = p
	case func(r.Term) r.Term:
		if p == nil {
			return nil, ErrInvalidPredicate
		}
		filter = func(doc r.Term) r.Term { return p(doc) }
	default:
		return nil, fmt.Errorf("%w (got %T)", ErrInvalidPredicate, predicate)
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	jobs, err := q.db.FindJobs(ctx, q.store(), filter)
	if err != nil {
		return nil, fmt.Errorf("queue %s: find jobs: %w", q.cfg.Name, err)
	}
	return jobs, nil
}

// FindJobByName is queue.Queue.FindJobByName, whose doc says what it does.
func (q *Queue) FindJobByName(ctx context.Context, name string) ([]*job.Job, error) {
	if name == "" {
		return nil, job.ErrInvalidName
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	jobs, err := q.db.JobsNamed(ctx, q.store(), name)
	if err != nil {
		return nil, fmt.Errorf("queue %s: find jobs named %s: %w", q.cfg.Name, errtext.Key(name), err)
	}
	return jobs, nil
}

// ContainsJobByName is queue.Queue.ContainsJobByName, whose doc says what it does.
func (q *Queue) ContainsJobByName(ctx context.Context, name string) (bool, error) {
	if name == "" {
		return false, job.ErrInvalidName
	}
	end, err := q.begin(ctx)
	if err != nil {
		return false, err
	}
	defer end()
	found, err := q.db.HasJobNamed(ctx, name)
	if err != nil {
		return false, fmt.Errorf("queue %s: look for jobs named %s: %w", q.cfg.Name, errtext.Key(name), err)
	}
	return found, nil
}
