package job

import (
	"context"
	"math"
)

// saveable reports why j cannot be saved, if it cannot.
func (j *Job) saveable() error {
	if j.store == nil {
		return ErrDetached
	}
	if j.Status == Created {
		return ErrNotAdded
	}
	return nil
}

// Update saves every field of the job, replacing the stored document, and appends the log
// entry "Job updated. Old values in log data" whose data holds the stored values it
// replaced (without their log). A field deleted from Fields is deleted from the document.
// Nothing is written when the job is invalid (see Validate) or no longer in the queue
// (ErrNotFound).
func (j *Job) Update(ctx context.Context) error {
	if err := j.saveable(); err != nil {
		return err
	}
	if err := j.Validate(); err != nil {
		return err
	}
	return j.store.SaveJob(ctx, j)
}

// AddLog appends an entry to the job's log, in the database and in j.Log. Zero values take
// the original's defaults: nil data an empty object, an empty message "See the data
// attached to this log entry", an empty type Information, an empty status the job's
// status.
func (j *Job) AddLog(ctx context.Context, data any, message string, typ LogType, status Status) error {
	if err := j.saveable(); err != nil {
		return err
	}
	if data == nil {
		data = map[string]any{}
	}
	return j.store.SaveLog(ctx, j, data, message, typ, status)
}

// UpdateProgress records how far an active job has come, in percent (clamped to 0..100; NaN
// counts as 0). It also pushes the job's dateEnable forward by its timeout, so that a long
// job that reports progress is not taken for a crashed one, and restarts its timeout. It
// returns ErrNotActive unless the job is active, here and in the database.
func (j *Job) UpdateProgress(ctx context.Context, percent float64) error {
	if err := j.saveable(); err != nil {
		return err
	}
	if j.Status != Active {
		return ErrNotActive
	}
	return j.store.SaveProgress(ctx, j, clampProgress(percent))
}

// clampProgress maps percent into 0..100, NaN to 0.
func clampProgress(percent float64) float64 {
	if math.IsNaN(percent) || percent < 0 {
		return 0
	}
	return math.Min(percent, 100)
}
