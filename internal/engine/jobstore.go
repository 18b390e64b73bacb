package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// jobStore is the job.Store the queue attaches to the jobs it hands out (rdb.Attach,
// rdb.FromDocument): it saves them for their own methods (Update, AddLog,
// UpdateProgress) and decodes their payloads and results. It is how package job reaches
// the queue without importing it.
type jobStore struct{ q *Queue }

var _ rdb.Store = jobStore{}

func (q *Queue) store() jobStore { return jobStore{q} }

// QueueID is the id stamped on the jobs the store saves.
func (s jobStore) QueueID() string { return s.q.id }

// SaveJob saves j for Job.Update. One replace writes the job and appends the entry "Job
// updated" with the replaced values as its data, so the old values and the new ones
// cannot interleave with another writer's.
func (s jobStore) SaveJob(ctx context.Context, j *job.Job) error {
	return s.q.public(s.saveJob(ctx, j))
}

func (s jobStore) saveJob(ctx context.Context, j *job.Job) error {
	if err := s.q.beginJob(ctx); err != nil {
		return err
	}
	e := rdb.NewLog(j, s.q.id, nil, job.MessageUpdated, job.Information, "")
	return s.q.updateJob(ctx, j, e, 0)
}

// errNotOwned reports a write of a run's outcome that found the job changed by another
// party (cancelled, recovered by a review, claimed again), which it leaves alone.
var errNotOwned = processor.ErrNotOwned

// updateJob is UpdateJob without the checks of a call, for the processor too. A positive
// owner writes only while the job is still active in the run that made that processCount
// (errNotOwned otherwise).
func (q *Queue) updateJob(ctx context.Context, j *job.Job, e job.LogEntry, owner int) error {
	res, err := q.db.ReplaceJob(ctx, j, e, owner)
	if err != nil {
		return fmt.Errorf("queue %s: update job %s: %w", q.cfg.Name, j.ID, err)
	}
	if res.Unchanged > 0 {
		return fmt.Errorf("queue %s: update job %s: %w", q.cfg.Name, j.ID, errNotOwned)
	}
	if err := q.refresh(j, res); err != nil {
		return err
	}
	q.emit(Event{Type: EventUpdated, JobID: j.ID})
	if j.Status == job.Waiting || j.Status == job.Failed {
		q.wakeProcessing() // it may be due now; the feed does not report this queue's changes
	}
	return nil
}

// SaveLog appends a log entry for Job.AddLog.
func (s jobStore) SaveLog(ctx context.Context, j *job.Job, data any, message string, typ job.LogType, status job.Status) error {
	return s.q.public(s.saveLog(ctx, j, data, message, typ, status))
}

func (s jobStore) saveLog(ctx context.Context, j *job.Job, data any, message string, typ job.LogType, status job.Status) error {
	q := s.q
	if err := q.beginJob(ctx); err != nil {
		return err
	}
	e := rdb.NewLog(j, q.id, data, message, typ, status)
	res, trunc, err := q.db.AppendJobLog(ctx, j, e)
	if err != nil {
		return fmt.Errorf("queue %s: add log to job %s: %w", q.cfg.Name, j.ID, err)
	}
	if res.Skipped > 0 {
		return fmt.Errorf("%w: %s", job.ErrNotFound, j.ID)
	}
	j.QueueID = q.id
	j.Log = rdb.AppendLog(j.Log, e, q.cfg.LimitJobLogs, trunc)
	q.emit(Event{Type: EventLog, JobID: j.ID})
	return nil
}

// SaveProgress stores progress for Job.UpdateProgress. The job must be active in the database too, in the
// same run: a job cancelled, failed or claimed again elsewhere is left alone. Reports of a
// job running here that come faster than progressInterval are coalesced: the call returns
// at once, and the last value is written when the interval has passed.
func (s jobStore) SaveProgress(ctx context.Context, j *job.Job, percent float64) error {
	return s.q.public(s.saveProgress(ctx, j, percent))
}

func (s jobStore) saveProgress(ctx context.Context, j *job.Job, percent float64) error {
	q := s.q
	if err := q.beginJob(ctx); err != nil {
		return err
	}
	if p := q.processor(); p != nil {
		if ok, err := p.Progress(ctx, j, percent, q.writeProgress); ok {
			return err
		}
	}
	return q.writeProgress(ctx, j, percent, true)
}

// writeProgress writes a progress report, moves the job's lease and restarts its timeout.
// With refresh, j is updated to the stored job; a trailing write runs beside the handler,
// which owns j, and leaves it alone.
func (q *Queue) writeProgress(ctx context.Context, j *job.Job, percent float64, refresh bool) error {
	res, err := q.db.WriteProgress(ctx, j, percent, q.leaseEnd(j, time.Now().UTC().Truncate(time.Millisecond)))
	if err != nil {
		return fmt.Errorf("queue %s: update progress of job %s: %w", q.cfg.Name, j.ID, err)
	}
	if res.Unchanged > 0 {
		return fmt.Errorf("%w: job %s in the database", job.ErrNotActive, j.ID)
	}
	run := j.ProcessCount
	if refresh {
		if err := q.refresh(j, res); err != nil {
			return err
		}
	}
	if p := q.processor(); p != nil {
		p.Touched(j.ID, run)
	}
	q.emit(Event{Type: EventProgress, JobID: j.ID, Progress: percent})
	return nil
}

// refresh replaces j's fields with the stored document a write returned, so that the
// caller's job is what is in the database.
func (q *Queue) refresh(j *job.Job, res rdb.WriteResult) error {
	if res.Skipped > 0 || len(res.Changes) == 0 {
		return fmt.Errorf("%w: %s", job.ErrNotFound, j.ID)
	}
	doc, ok := res.Changes[0].NewValue.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: %s", job.ErrNotFound, j.ID)
	}
	stored, err := rdb.FromDocument(q.store(), doc)
	if err != nil {
		return fmt.Errorf("queue %s: read back job %s: %w", q.cfg.Name, j.ID, err)
	}
	*j = *stored
	return nil
}
