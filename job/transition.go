package job

import "time"

// Repeating reports whether the job runs again after its current run: Repeat is
// RepeatForever, or the job has run (ProcessCount, counting the current run) no more than
// Repeat times. A job with Repeat n therefore runs n+1 times.
func (j *Job) Repeating() bool {
	return j.Repeat < 0 || (j.Repeat > 0 && j.ProcessCount <= j.Repeat)
}

// Transition is what a run's outcome does to a job: the values to store, and how to report
// it.
type Transition struct {
	Status     Status
	DateEnable time.Time
	RetryCount int
	Progress   float64
	// LogType is the type of the outcome's log entry.
	LogType LogType
	// Repeating is true when the job goes back to waiting to run again.
	Repeating bool
	// Retry is true when a failed job will be retried.
	Retry bool
}

// AfterSuccess is what a successful run at now does to j: completed with progress 100, or
// waiting again after RepeatDelay with progress 0 when the job repeats. DateEnable is
// unchanged for a completed job.
func AfterSuccess(j *Job, now time.Time) Transition {
	if j.Repeating() {
		return Transition{Status: Waiting, DateEnable: now.Add(j.RepeatDelay), RetryCount: j.RetryCount,
			LogType: Information, Repeating: true}
	}
	return Transition{Status: Completed, DateEnable: j.DateEnable, RetryCount: j.RetryCount,
		Progress: 100, LogType: Information}
}

// AfterFailure is what a failed run at now does to j, with progress 0:
//   - retries left (RetryCount < RetryMax): failed, RetryCount+1, enabled again after
//     RetryDelay × the new RetryCount, so each retry waits longer, or after the job's
//     Backoff (a warning entry);
//   - none left but repeating: waiting, RetryCount 0, enabled after RepeatDelay (an error
//     entry);
//   - otherwise: terminated (an error entry).
//
// The original documents the retry delay as RetryDelay × RetryCount after the increment
// (its "Job Retry" steps: 10 minutes after the first failure), while its code multiplied
// before the increment and retried the first failure at once; the documented behaviour is
// the one kept here.
func AfterFailure(j *Job, now time.Time) Transition {
	if j.RetryCount < j.RetryMax {
		n := j.RetryCount + 1
		return Transition{Status: Failed, DateEnable: now.Add(j.RetryDelayFor(n)), RetryCount: n,
			LogType: Warning, Retry: true}
	}
	if j.Repeating() {
		return Transition{Status: Waiting, DateEnable: now.Add(j.RepeatDelay), LogType: Error, Repeating: true}
	}
	return Transition{Status: Terminated, DateEnable: now, RetryCount: j.RetryCount, LogType: Error}
}
