package queue

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// FindJob returns the jobs that match predicate, oldest first (by dateCreated). The
// predicate is a map of field values that must be equal (nested maps match nested fields,
// e.g. {"data": {"user": "ann"}}), or a function that builds a ReQL boolean from a
// document, e.g. func(doc r.Term) r.Term { return doc.Field("retryCount").Gt(1) }.
// The State Document is never returned.
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
		return nil, fmt.Errorf("queue %s: find jobs: %w", q.cfg.name, err)
	}
	return jobs, nil
}

// FindJobByName returns the jobs with the given name, oldest first, using the name index.
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
		return nil, fmt.Errorf("queue %s: find jobs named %q: %w", q.cfg.name, name, err)
	}
	return jobs, nil
}

// ContainsJobByName reports whether any job has the given name, reading no job.
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
		return false, fmt.Errorf("queue %s: look for jobs named %q: %w", q.cfg.name, name, err)
	}
	return found, nil
}
