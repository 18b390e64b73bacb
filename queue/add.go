package queue

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob returns a new job with the queue's job options (see SetJobOptions) and data as
// its payload. It is not in the queue until AddJob; set its options with the job's setters
// first.
func (q *Queue) CreateJob(data any) *job.Job {
	j := job.New(data, q.JobOptions())
	rdb.Attach(j, q.store())
	return j
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
// Up to 1,000 jobs go in one query. A larger batch is written in chunks, several at once,
// and is all-or-nothing in the same way: when a chunk fails, the jobs of the chunks that
// were written are removed again. A failure of the server (not an answer about the
// jobs) can leave that removal undone; the error then says how many jobs may have been
// added.
func (q *Queue) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	if err := checkNewJobs(jobs); err != nil {
		return nil, err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	b := q.newBatch(jobs)
	if len(b.plain) > 0 {
		ids, docs := b.pick(b.plain)
		if err := q.db.InsertAll(ctx, ids, docs); err != nil {
			return nil, err
		}
	}
	var there map[string]*job.Job
	if len(b.unique) > 0 {
		ids, docs := b.pick(b.unique)
		if there, err = q.db.InsertUnique(ctx, q.store(), ids, docs); err != nil {
			if _, rerr := q.db.Unadd(ctx, b.ids, b.docs); rerr != nil {
				return nil, fmt.Errorf("%w; removing the jobs already written failed too, so some may have been added (look them up by id): %w", err, rerr)
			}
			return nil, err
		}
	}
	return q.added(jobs, b.logs, there), nil
}

// addBatch is what AddJob writes: each job's document, id and log as stored, and which
// jobs are plain and which unique (see job.SetUniqueKey).
type addBatch struct {
	docs          []any
	ids           []string
	logs          [][]job.LogEntry
	plain, unique []int
}

// newBatch makes the documents of jobs as this queue adds them: waiting, in its name,
// with the log entry "Job added to the queue".
func (q *Queue) newBatch(jobs []*job.Job) addBatch {
	b := addBatch{docs: make([]any, len(jobs)), ids: make([]string, len(jobs)), logs: make([][]job.LogEntry, len(jobs))}
	for i, j := range jobs {
		if j.UniqueKey() != "" {
			b.unique = append(b.unique, i)
		} else {
			b.plain = append(b.plain, i)
		}
		saved := *j
		saved.QueueID = q.id
		if saved.Status == job.Created {
			saved.Status = job.Waiting
		}
		e := rdb.NewLog(&saved, q.id, nil, job.MessageAdded, job.Information, job.Waiting)
		saved.Log = rdb.AppendLog(append([]job.LogEntry(nil), j.Log...), e, q.cfg.limitJobLogs, rdb.TruncatedLog(&saved, q.id, q.cfg.limitJobLogs, job.Waiting))
		b.logs[i] = saved.Log
		b.docs[i] = saved.Document()
		b.ids[i] = j.ID
	}
	return b
}

// pick returns the ids and documents of the jobs at idx.
func (b addBatch) pick(idx []int) ([]string, []any) {
	ids, docs := make([]string, len(idx)), make([]any, len(idx))
	for k, i := range idx {
		ids[k], docs[k] = b.ids[i], b.docs[i]
	}
	return ids, docs
}

// added updates the jobs AddJob wrote (attached to the queue, waiting, with their log),
// raises their added events and hints the processor of them. It returns what AddJob
// returns: each job, or the job already there for its unique key.
func (q *Queue) added(jobs []*job.Job, logs [][]job.LogEntry, there map[string]*job.Job) []*job.Job {
	out := make([]*job.Job, len(jobs))
	added := make([]*job.Job, 0, len(jobs))
	for i, j := range jobs {
		if other, ok := there[j.ID]; ok {
			out[i] = other
			continue
		}
		out[i] = j
		rdb.Attach(j, q.store())
		if j.Status == job.Created {
			j.Status = job.Waiting
		}
		j.Log = logs[i]
		q.emit(Event{Type: EventAdded, JobID: j.ID})
		added = append(added, j)
	}
	if p := q.processor(); p != nil {
		for _, j := range added {
			p.Hint(j, q.id)
		}
	}
	return out
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
