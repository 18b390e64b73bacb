package job

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoResult is returned by Result for a job that has no completion log entry: it has not
// completed (yet), or its log was truncated past the entry.
var ErrNoResult = errors.New("job: no result: the job has not completed")

// ErrResultNotStored is returned by Result for a job that completed with a result that
// could not be stored (a NaN, a time outside the storable years, a func…): the job
// completed, and the error says which field and why.
var ErrResultNotStored = errors.New("job: the handler's result could not be stored")

// ResultNotStoredPrefix starts the errorMessage of a completion log entry whose result was
// left out, followed by the reason; Result reads it back as ErrResultNotStored.
const ResultNotStoredPrefix = "result not stored: "

// messageCompletedBefore is the completion message of this library before v0.2, read for
// the results of jobs it completed.
const messageCompletedBefore = "Job completed successfully"

// Result decodes the handler's result of the job's last completed run (the data of its
// completion log entry, as the original stores it) into v, which must be a non-nil pointer.
// A repeating job has a result after each run. It returns ErrNoResult when the job has
// not completed, ErrResultNotStored when the handler's result could not be stored (the
// error names the field and why), and nothing is decoded for a nil result. It decodes as
// DataAs does.
func (j *Job) Result(v any) error {
	for i := len(j.Log) - 1; i >= 0; i-- {
		e := j.Log[i]
		if e.Message != MessageCompleted && e.Message != messageCompletedBefore {
			continue
		}
		if reason, ok := strings.CutPrefix(e.ErrorMessage, ResultNotStoredPrefix); ok {
			return fmt.Errorf("job %s: %w: %s", j.ID, ErrResultNotStored, reason)
		}
		if err := j.decode(e.Data, v); err != nil {
			return fmt.Errorf("job %s: result: %w", j.ID, err)
		}
		return nil
	}
	return fmt.Errorf("job %s: %w", j.ID, ErrNoResult)
}
