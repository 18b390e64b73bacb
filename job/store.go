package job

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/payload"
)

// Store is what a job needs from the queue that handed it out: Update, AddLog and
// UpdateProgress save through it. It is an interface
// because the queue imports package job, not the other way round: a queue attaches its
// store to every job it creates, adds or reads (see Job.Attach), and package job needs no
// database driver. Implement it to give jobs a storage of your own, or a fake in tests.
type Store interface {
	// SaveJob saves every field of j and appends the log entry "Job updated. Old values
	// in log data" (Job.Update, which has validated j).
	SaveJob(ctx context.Context, j *Job) error
	// SaveLog appends an entry made of the given values to the stored job's log and to
	// j.Log (Job.AddLog, which has turned nil data into an empty object; empty message,
	// type and status take the defaults AddLog documents).
	SaveLog(ctx context.Context, j *Job, data any, message string, typ LogType, status Status) error
	// SaveProgress stores the progress of an active job (Job.UpdateProgress, which has
	// clamped percent to 0..100).
	SaveProgress(ctx context.Context, j *Job, percent float64) error
}

// Attach makes s the store j saves itself through; a nil s detaches j, whose Update, AddLog and UpdateProgress then return
// ErrDetached. Queues attach the jobs they hand out; call it for a Store of your own. It
// leaves j's fields, QueueID included, as they are.
func (j *Job) Attach(s Store) { j.store = s }

// decode decodes value, a payload or a result of j, into v by the names values are stored
// by (see "Payloads" in the package documentation). A job not read from the database (made
// by New, not yet added) holds the producer's own Go values: they are encoded first, so
// that what a handler reads does not depend on where its job came from.
func (j *Job) decode(value, v any) error {
	tree, err := payload.Encode(value)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if err := payload.Decode(tree, v); err != nil {
		return fmt.Errorf("decode into %T: %w", v, err)
	}
	return nil
}
