package queue

import (
	"context"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob returns a new job with the queue's job options (see SetJobOptions) and data as
// its payload. It is not in the queue until AddJob; set its options with the job's setters
// first.
func (q *Queue) CreateJob(data any) *job.Job {
	return q.e.CreateJob(data)
}

// AddJob adds jobs to the queue. A job still at status Created becomes Waiting, gets the
// log entry "Job added to the queue", and is stamped with this queue's id. It returns the
// jobs it added: the same objects, updated to what was stored. For a job with a unique
// key (job.SetUniqueKey) whose key has an unfinished job in the queue already, nothing is
// written and that job is returned in its place; this is not an error.
//
// Every job is checked first (see job.Validate): when any is invalid, nil or given twice,
// nothing is written and the error wraps job.ErrInvalid. When a job with one of the ids
// is in the table already, nothing is added and the error wraps job.ErrExists and names
// the ids. That holds against jobs written before the call, and against another AddJob
// writing the same ids at the same moment too: the jobs this call wrote are then removed
// again, unless a worker has claimed one meanwhile (which the error says).
//
// When this queue processes (Process), is idle and has a free slot for each of the jobs,
// and they are plain jobs due now, they are inserted already active in its name and start
// at once: the insert is then their only write before the handler runs, where a waiting
// job waits for a claim query too (about half the latency of an added job on an idle
// queue). AddJob then returns them active, and other queues see them added, never
// waiting. An idle queue knows of no other claimable job, so none is passed over.
//
// Up to 1,000 jobs go in one query. A larger batch is written in chunks, several at once,
// and is all-or-nothing in the same way: when a chunk fails, the jobs of the chunks that
// were written are removed again. A failure of the server (not an answer about the
// jobs) can leave that removal undone; the error then says how many jobs may have been
// added.
func (q *Queue) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	return public(q.e.AddJob(ctx, jobs...))
}

// Adder is what code that only adds jobs needs of a queue: a web handler, a producer, a
// cron of your own. *Queue satisfies it; rjqtest.Adder is one in memory, so that such
// code is unit-tested without a server.
type Adder interface {
	// CreateJob returns a new job with the queue's job options (Queue.CreateJob).
	CreateJob(data any) *job.Job
	// AddJob adds jobs to the queue (Queue.AddJob).
	AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error)
}

var _ Adder = (*Queue)(nil)

// CheckJobs checks jobs as AddJob does before it writes anything: at least one job, none
// nil, each valid (job.Validate), no id twice. A producer that builds batches away from a
// queue can check them early; rjqtest.Adder checks with it.
func CheckJobs(jobs ...*job.Job) error { return publicErr(engine.CheckNewJobs(jobs)) }
