package listing

import (
	"context"
	"slices"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Queue is one queue of a database as an overview shows it.
type Queue struct {
	Name string `json:"name"`
	// Counts are its jobs by status; FinishedAsOf, when set, says that the finished ones
	// come from the tally, as of then (see rdb.Counts).
	Counts       map[job.Status]int `json:"counts"`
	FinishedAsOf time.Time          `json:"finishedAsOf,omitzero"`
	// FinishedUnknown and FinishedEstimate: the finished jobs of a big table no Master has
	// tallied yet (see rdb.Counts).
	FinishedUnknown  bool `json:"finishedUnknown,omitempty"`
	FinishedEstimate int  `json:"finishedEstimate,omitempty"`
	// Paused is true when its State Document says every queue of the table is paused.
	Paused bool `json:"paused"`
	// OldestWaitingSeconds is how long its oldest due job has waited to be claimed.
	OldestWaitingSeconds float64 `json:"oldestWaitingSeconds"`
	// Workers are its live Go workers (Node.js workers do not register).
	Workers int `json:"workers"`
	// Error says what could not be read of it; the fields above are then partly zero.
	Error string `json:"error,omitempty"`
}

// Queues reads every queue table of database db, in name order: the tables that carry
// the status and inactive-priority indexes every queue of this format has, Go or Node.js
// (side tables such as "<queue>_workers" carry neither). Each costs a few index reads,
// never a scan (see rdb.Table.Counts, rdb.OldestWaiting), and the queues are read in
// parallel, so the overview answers in milliseconds however many finished jobs they keep.
// A queue that cannot be read is listed with its Error.
func Queues(ctx context.Context, s r.QueryExecutor, db string, now time.Time) ([]Queue, error) {
	names, err := QueueNames(ctx, s, db)
	if err != nil {
		return nil, err
	}
	out := make([]Queue, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		out[i].Name = name
		wg.Go(func() { readQueue(ctx, s, db, now, &out[i]) })
	}
	wg.Wait()
	return out, nil
}

// QueueNames lists the queue tables of database db, in name order, with one query and
// no document read (see Queues for what makes a table a queue).
func QueueNames(ctx context.Context, s r.QueryExecutor, db string) ([]string, error) {
	var tables []struct {
		Name    string   `rethinkdb:"name"`
		Indexes []string `rethinkdb:"indexes"`
	}
	list := r.DB(db).TableList().Map(func(name r.Term) any {
		return map[string]any{"name": name, "indexes": r.DB(db).Table(name).IndexList()}
	})
	cur, err := list.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return nil, err
	}
	if err := cur.All(&tables); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range tables {
		if slices.Contains(t.Indexes, rdb.IndexStatus) && slices.Contains(t.Indexes, rdb.IndexInactivePriorityDateCreated) {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// readQueue fills q's counts, pause, oldest waiting job and workers.
func readQueue(ctx context.Context, s r.QueryExecutor, db string, now time.Time, q *Queue) {
	t := &rdb.Table{Session: s, DB: db, Name: q.Name}
	c, err := t.Counts(ctx, rdb.ExactBelowJobs)
	if err != nil {
		q.Error = err.Error()
		return
	}
	q.Counts, q.FinishedAsOf = c.ByStatus, c.FinishedAsOf
	q.FinishedUnknown, q.FinishedEstimate = c.FinishedUnknown, c.FinishedEstimate
	state, err := t.State(ctx)
	if err != nil {
		q.Error = err.Error()
		return
	}
	q.Paused = state == "paused"
	age, err := rdb.OldestWaiting(ctx, s, t.Term(), now)
	if err != nil {
		q.Error = err.Error()
		return
	}
	q.OldestWaitingSeconds = age.Seconds()
	workers, err := t.Workers(ctx)
	if err != nil {
		q.Error = err.Error()
		return
	}
	q.Workers = len(workers)
}
