package rdb

import (
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// StateDocument returns the State Document that records a queue's global state ("paused",
// "active" or "reviewed"), changed by queueID now (the server's clock). Queues write it
// with conflict "replace" and follow it through their changefeed.
func StateDocument(queueID, state string) map[string]any {
	return map[string]any{docfmt.ID: job.StateDocumentID, docfmt.QueueID: queueID, "dateChange": r.Now(), "state": state}
}

// A Store is the job.Store a queue attaches to the jobs it hands out (package queue's),
// with the queue's id, which Attach stamps on a job new to the queue.
type Store interface {
	job.Store
	// QueueID is the id of the queue whose jobs the store saves.
	QueueID() string
}

// Attach makes s the store that saves j and stamps j with its queue id, for a job new to
// the queue.
func Attach(j *job.Job, s Store) {
	j.Attach(s)
	j.QueueID = s.QueueID()
}

// RepeatValue is how a Repeat count is stored: false for 0, true for RepeatForever, else
// the count.
func RepeatValue(n int) any {
	switch {
	case n == 0:
		return false
	case n < 0:
		return true
	}
	return n
}

// FromDocument reads a job from a document as rethinkdb-go returns it (see
// job.FromDocument), attached to s when s is not nil.
func FromDocument(s Store, doc map[string]any) (*job.Job, error) {
	j, err := job.FromDocument(doc)
	if err != nil {
		return nil, err
	}
	if s != nil {
		j.Attach(s)
	}
	return j, nil
}
