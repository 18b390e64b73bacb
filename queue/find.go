package queue

import (
	"context"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// FindJob returns the jobs that match predicate, oldest first (by dateCreated). The
// predicate is a map of field values that must be equal (nested maps match nested fields,
// e.g. {"data": {"user": "ann"}}), or a function that builds a ReQL boolean from a
// document, e.g. func(doc r.Term) r.Term { return doc.Field("retryCount").Gt(1) }.
// The State Document is never returned.
func (q *Queue) FindJob(ctx context.Context, predicate any) ([]*job.Job, error) {
	return public(q.e.FindJob(ctx, predicate))
}

// FindJobByName returns the jobs with the given name, oldest first, using the name index.
func (q *Queue) FindJobByName(ctx context.Context, name string) ([]*job.Job, error) {
	return public(q.e.FindJobByName(ctx, name))
}

// ContainsJobByName reports whether any job has the given name, reading no job.
func (q *Queue) ContainsJobByName(ctx context.Context, name string) (bool, error) {
	return public(q.e.ContainsJobByName(ctx, name))
}
