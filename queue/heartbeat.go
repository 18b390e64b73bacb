package queue

import (
	"context"
	"time"
)

// Worker is a queue that processes jobs of a table, as Workers lists it.
type Worker struct {
	// QueueID is the queue's id (hostname:db:queue:pid:uuid).
	QueueID string `json:"queueId"`
	// Started is when the queue began processing; LastSeen its latest heartbeat (UTC).
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"lastSeen"`
	// Running is how many jobs it ran at its latest heartbeat, of Concurrency at most.
	Running     int `json:"running"`
	Concurrency int `json:"concurrency"`
}

// Workers lists the queues that process this table's jobs and are alive: those whose
// latest heartbeat is less than three of their heartbeats old (Go queues with
// Options.Heartbeat on; Node.js workers do not register). It prunes the entries of dead
// ones.
func (q *Queue) Workers(ctx context.Context) ([]Worker, error) {
	docs, err := q.e.Workers(ctx)
	if err != nil {
		return nil, publicErr(err)
	}
	out := make([]Worker, len(docs))
	for i, d := range docs {
		out[i] = Worker(d)
		out[i].Started, out[i].LastSeen = out[i].Started.UTC(), out[i].LastSeen.UTC()
	}
	return out, nil
}
