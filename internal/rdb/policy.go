package rdb

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Repeating reports whether the job runs again after its current run: Repeat is
// RepeatForever, or the job has run (ProcessCount, counting the current run) no more than
// Repeat times. A job with Repeat n therefore runs n+1 times.
func Repeating(j *job.Job) bool {
	return j.Repeat < 0 || (j.Repeat > 0 && j.ProcessCount <= j.Repeat)
}

// Transition is what a run's outcome does to a job: the values to store, and how to report
// it.
type Transition struct {
	Status     job.Status
	DateEnable time.Time
	RetryCount int
	Progress   float64
	// LogType is the type of the outcome's log entry.
	LogType job.LogType
	// Repeating is true when the job goes back to waiting to run again.
	Repeating bool
	// Retry is true when a failed job will be retried.
	Retry bool
}

// AfterSuccess is what a successful run at now does to j: completed with progress 100, or
// waiting again after RepeatDelay with progress 0 when the job repeats. DateEnable is
// unchanged for a completed job.
func AfterSuccess(j *job.Job, now time.Time) Transition {
	if Repeating(j) {
		return Transition{Status: job.Waiting, DateEnable: now.Add(j.RepeatDelay), RetryCount: j.RetryCount,
			LogType: job.Information, Repeating: true}
	}
	return Transition{Status: job.Completed, DateEnable: j.DateEnable, RetryCount: j.RetryCount,
		Progress: 100, LogType: job.Information}
}

// AfterFailure is what a failed run at now does to j, with progress 0:
//   - retries left (RetryCount < RetryMax): failed, RetryCount+1, enabled again after
//     RetryDelay × the new RetryCount, so each retry waits longer, or after the job's
//     Backoff or the queue's custom delay (see RetryDelay) (a warning entry);
//   - none left but repeating: waiting, RetryCount 0, enabled after RepeatDelay (an error
//     entry);
//   - otherwise: terminated (an error entry).
//
// The original documents the retry delay as RetryDelay × RetryCount after the increment
// (its "Job Retry" steps: 10 minutes after the first failure), while its code multiplied
// before the increment and retried the first failure at once; the documented behaviour is
// the one kept here.
func AfterFailure(j *job.Job, now time.Time, custom CustomDelay) Transition {
	if j.RetryCount < j.RetryMax {
		n := j.RetryCount + 1
		return Transition{Status: job.Failed, DateEnable: now.Add(RetryDelay(j, n, custom)), RetryCount: n,
			LogType: job.Warning, Retry: true}
	}
	if Repeating(j) {
		return Transition{Status: job.Waiting, DateEnable: now.Add(j.RepeatDelay), LogType: job.Error, Repeating: true}
	}
	return Transition{Status: job.Terminated, DateEnable: now, RetryCount: j.RetryCount, LogType: job.Error}
}

// CustomDelay is a queue's own retry delay for retry number n of j (Options.RetryBackoff);
// nil when it has none.
type CustomDelay func(j *job.Job, n int) time.Duration

// RetryDelay is how long the job j waits before its retry number n (1 for the first): its
// exponential Backoff when it has one, else custom's delay when the queue has one (never
// negative), else RetryDelay × n.
func RetryDelay(j *job.Job, n int, custom CustomDelay) time.Duration {
	b := j.Backoff()
	if !b.Exponential && custom != nil {
		return max(custom(j, n), 0)
	}
	return b.Delay(j.RetryDelay, n)
}

// LeaseEnd is when a run of j that starts (or renews, or reports progress) at now may be
// taken for a crashed one: the original's lease, now + timeout + retryDelay × retryCount,
// or now + heartbeatLease when that comes sooner (heartbeats on: positive heartbeatLease).
func LeaseEnd(j *job.Job, now time.Time, heartbeatLease time.Duration) time.Time {
	end := now.Add(j.Timeout + time.Duration(j.RetryCount)*j.RetryDelay)
	if heartbeatLease > 0 {
		if short := now.Add(heartbeatLease); short.Before(end) {
			return short
		}
	}
	return end
}
