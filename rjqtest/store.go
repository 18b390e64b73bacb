package rjqtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/payload"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// errRunOver is what the saves of a job return once its run has ended: the store is a
// record of the run, and a save that came later would change a Result already returned.
var errRunOver = errors.New("rjqtest: the run has ended; the job is a record of it and saves nothing")

// store is the job.Store of one run: a table of one job in memory that applies each save
// as the queue's store does (see queue's jobStore and internal/rdb) and records it.
type store struct {
	set settings
	// timeout restarts the run's timeout, as a progress report does in a queue.
	timeout func()

	mu sync.Mutex
	// stored is the job as the table would hold it, its values in their stored form.
	stored *job.Job
	// over is set when the run has ended: the store saves nothing from then on.
	over     bool
	progress []float64
	logs     []job.LogEntry
	updates  []*job.Job
}

var _ job.Store = (*store)(nil)

// SaveJob saves j for Job.Update: the stored job becomes j, with the entry "Job updated"
// holding the replaced values, and j is read back, as a queue's Update reads it back.
func (s *store) SaveJob(ctx context.Context, j *job.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return errRunOver
	}
	if err := s.replace(j); err != nil {
		return err
	}
	s.updates = append(s.updates, s.readBack())
	return nil
}

// replace is the write of Update and of a pass-back; s.mu is held.
func (s *store) replace(j *job.Job) error {
	j.QueueID = QueueID
	old := s.stored.Document()
	delete(old, docfmt.Log)
	e := rdb.NewLog(j, QueueID, nil, job.MessageUpdated, job.Information, "")
	var err error
	if e.Data, err = storedForm(old); err != nil {
		return err
	}
	next := *j
	next.Log = rdb.AppendLog(slices.Clone(j.Log), e, s.set.limitJobLogs, rdb.TruncatedLog(j, QueueID, s.set.limitJobLogs, j.Status))
	if err := s.store(&next); err != nil {
		return err
	}
	*j = *s.readBack()
	return nil
}

// SaveLog appends an entry for Job.AddLog, to the stored job and to j.
func (s *store) SaveLog(ctx context.Context, j *job.Job, data any, message string, typ job.LogType, status job.Status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return errRunOver
	}
	e := rdb.NewLog(j, QueueID, data, message, typ, status)
	trunc := rdb.TruncatedLog(j, QueueID, s.set.limitJobLogs, e.Status)
	kept := e
	var err error
	if kept.Data, err = storedForm(data); err != nil {
		return fmt.Errorf("rjqtest: add log to job %s: %w", j.ID, err)
	}
	s.stored.Log = rdb.AppendLog(s.stored.Log, kept, s.set.limitJobLogs, trunc)
	s.stored.QueueID = QueueID
	j.QueueID = QueueID
	j.Log = rdb.AppendLog(j.Log, e, s.set.limitJobLogs, trunc)
	s.logs = append(s.logs, e)
	return nil
}

// SaveProgress stores a progress report for Job.UpdateProgress while the run owns the
// job, moves its lease and restarts its timeout, and reads j back. Unlike a queue, which
// coalesces reports that come within 200ms of each other, it records every one.
func (s *store) SaveProgress(ctx context.Context, j *job.Job, percent float64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over || s.stored.Status != job.Active || s.stored.ProcessCount != j.ProcessCount {
		return fmt.Errorf("%w: job %s in the database", job.ErrNotActive, j.ID)
	}
	e := rdb.NewLog(j, QueueID, s.stored.Progress, job.MessageProgress, job.Information, job.Active)
	s.stored.Log = rdb.AppendLog(s.stored.Log, e, s.set.limitJobLogs, rdb.TruncatedLog(j, QueueID, s.set.limitJobLogs, job.Active))
	s.stored.Progress = percent
	s.stored.DateEnable = rdb.LeaseEnd(j, docfmt.Millis(time.Now()), s.set.heartbeatLease)
	s.stored.QueueID = QueueID
	*j = *s.readBack()
	s.timeout()
	s.progress = append(s.progress, percent)
	return nil
}

// store makes j the stored job, its values in their stored form; s.mu is held.
func (s *store) store(j *job.Job) error {
	c, err := storedJob(j)
	if err != nil {
		return err
	}
	s.stored = c
	return nil
}

// readBack is the stored job as a read returns it: a copy of its own, attached to s;
// s.mu is held.
func (s *store) readBack() *job.Job {
	c, err := storedJob(s.stored)
	if err != nil {
		// The stored values were stored once, and so encode again.
		panic(fmt.Sprintf("rjqtest: read back job %s: %v", s.stored.ID, err))
	}
	c.Attach(s)
	return c
}

// end closes the store to saves and returns the job as stored, after write has applied
// the run's outcome to it (write may be nil), and what the run recorded.
func (s *store) end(write func(stored *job.Job) error) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.over = true
	if write != nil {
		if err := write(s.stored); err != nil {
			return nil, err
		}
	}
	return &Result{
		Job:      s.readBack(),
		Progress: slices.Clone(s.progress),
		Logs:     slices.Clone(s.logs),
		Updates:  slices.Clone(s.updates),
	}, nil
}

// storedJob is a copy of j whose payload, fields and log data are in their stored form.
func storedJob(j *job.Job) (*job.Job, error) {
	c := *j
	var err error
	if c.Data, err = storedForm(j.Data); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if j.Fields != nil {
		f, err := storedForm(j.Fields)
		if err != nil {
			return nil, fmt.Errorf("fields: %w", err)
		}
		c.Fields, _ = f.(map[string]any)
	}
	c.Log = make([]job.LogEntry, len(j.Log))
	for i, e := range j.Log {
		if e.Data, err = storedForm(e.Data); err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		c.Log[i] = e
	}
	return &c, nil
}

// storedForm is v as a handler reads it back from RethinkDB: stored by its json names
// (numbers as float64, structs as maps), with times as the driver reads them. Each call
// returns values of its own, which the caller may change freely.
func storedForm(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	tree, err := payload.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", job.ErrInvalidData, err)
	}
	read, err := rdb.AsRead(map[string]any{"v": tree})
	if err != nil {
		return nil, err
	}
	return read["v"], nil
}
