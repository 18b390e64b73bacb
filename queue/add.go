package queue

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob returns a new job with the queue's job options (see SetJobOptions) and data as
// its payload. It is not in the queue until AddJob; set its options with the job's setters
// first.
func (q *Queue) CreateJob(data any) *job.Job {
	return job.New(q.store(), data, q.JobOptions())
}

// AddJob adds jobs to the queue in one insert. A job still at status Created becomes
// Waiting, gets the log entry "Job added to the queue", and is stamped with this queue's
// id. Every job is checked first (see job.Validate); when any is invalid, nil, given twice,
// or already in the table (job.ErrExists), nothing is written. It returns the jobs it
// added: the same objects, updated to what was stored.
func (q *Queue) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	if err := checkNewJobs(jobs); err != nil {
		return nil, err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	docs := make([]any, len(jobs))
	ids := make([]string, len(jobs))
	logs := make([][]job.LogEntry, len(jobs))
	for i, j := range jobs {
		saved := *j
		saved.QueueID = q.id
		if saved.Status == job.Created {
			saved.Status = job.Waiting
		}
		e := job.NewLog(&saved, q.id, nil, job.MessageAdded, job.Information, job.Waiting)
		saved.Log = job.AppendLog(append([]job.LogEntry(nil), j.Log...), e, q.cfg.limitJobLogs, job.TruncatedLog(&saved, q.id, q.cfg.limitJobLogs, job.Waiting))
		logs[i] = saved.Log
		docs[i] = saved.Document()
		ids[i] = j.ID
	}
	present := q.table().GetAll(anys(ids)...).Field("id").CoerceTo("array")
	term := present.Do(func(found r.Term) r.Term {
		return r.Branch(found.IsEmpty(), q.table().Insert(docs), map[string]any{"exists": found})
	})
	res, err := q.write(ctx, term)
	if err != nil {
		return nil, fmt.Errorf("queue %s: add %d jobs: %w", q.cfg.name, len(jobs), err)
	}
	if len(res.Exists) > 0 {
		return nil, fmt.Errorf("%w: %v (nothing was added)", job.ErrExists, res.Exists)
	}
	for i, j := range jobs {
		j.Attach(q.store())
		if j.Status == job.Created {
			j.Status = job.Waiting
		}
		j.Log = logs[i]
		q.emit(Event{Type: EventAdded, JobID: j.ID})
	}
	q.wakeProcessing()
	return jobs, nil
}

// checkNewJobs validates a batch for AddJob without touching the database.
func checkNewJobs(jobs []*job.Job) error {
	if len(jobs) == 0 {
		return ErrNoJobs
	}
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return fmt.Errorf("job %d: %w", i, ErrNilJob)
		}
		if err := j.Validate(); err != nil {
			return fmt.Errorf("job %d (%s): %w", i, j.ID, err)
		}
		if seen[j.ID] {
			return fmt.Errorf("job %d: %w: id %s is given twice", i, job.ErrInvalidID, j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}
