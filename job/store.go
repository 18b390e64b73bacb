package job

import (
	"context"
	"encoding/json"
	"fmt"
)

// Store is what a job needs from the queue that handed it out: Update, AddLog and
// UpdateProgress save through it, DataAs and Result decode through it. It is an interface
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
	// Decode decodes a stored value (a job's payload, a log entry's data) into v, a
	// pointer, by the rules the store wrote it by, so that a handler reads back what its
	// producer stored: a queue's follow rethinkdb-go's (the `rethinkdb` or `gorethink`
	// struct tag; a `json` tag only in a program that called r.SetTags with it; times stay
	// times).
	Decode(value, v any) error
}

// Attach makes s the store j saves itself through and decodes its payload and results
// with; a nil s detaches j, whose Update, AddLog and UpdateProgress then return
// ErrDetached. Queues attach the jobs they hand out; call it for a Store of your own. It
// leaves j's fields, QueueID included, as they are.
func (j *Job) Attach(s Store) { j.store = s }

// decode decodes value, a payload or a result of j, into v through j's store. A job with
// no store (made by New and not yet added, or detached) decodes by encoding/json's rules:
// its values are the producer's own Go values, with no stored form to follow, and JSON
// is the plain-Go rule set nearest to the driver's.
func (j *Job) decode(value, v any) error {
	if j.store != nil {
		return j.store.Decode(value, v)
	}
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode into %T: %w", v, err)
	}
	return nil
}
