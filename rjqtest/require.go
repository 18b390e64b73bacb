package rjqtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// pollInterval is how often RequireStatus reads a job that it cannot wait for with
// Queue.Wait (a status that is not final).
const pollInterval = 50 * time.Millisecond

// lastEntries is how many log entries a failure message shows: enough for the last run
// (claim, the handler's entries, its outcome) without burying the message.
const lastEntries = 6

// RequireAdded adds jobs to q and returns them as added, and fails tb at once if q refuses
// any (an invalid job says which setter was given what).
func RequireAdded(tb testing.TB, q *queue.Queue, jobs ...*job.Job) []*job.Job {
	tb.Helper()
	added, err := q.AddJob(tb.Context(), jobs...)
	if err != nil {
		tb.Fatalf("rjqtest: add %d job(s) to queue %s: %v", len(jobs), q.Name(), err)
		return nil
	}
	return added
}

// RequireCompleted waits up to timeout for the job id of q to complete and returns it,
// for its result (Job.Result). It fails tb at once when the job ends otherwise
// (cancelled, terminated) or is removed, and when the timeout passes, with the job's
// status, counters and last log entries, where the error of its last run is.
func RequireCompleted(tb testing.TB, q *queue.Queue, id string, timeout time.Duration) *job.Job {
	tb.Helper()
	return RequireStatus(tb, q, id, job.Completed, timeout)
}

// RequireStatus waits up to timeout for the job id of q to reach status want and returns
// it, and fails tb as RequireCompleted does. A final status (completed, cancelled,
// terminated) is awaited with Queue.Wait, which learns of it from any process; another
// is polled for, so one the job passes through quickly (failed, when the retry delay is
// short) may be missed, and one it has already is met at once (waiting, for a job just
// added: its ProcessCount tells a run apart). A job that reaches another final status
// fails tb at once.
func RequireStatus(tb testing.TB, q *queue.Queue, id string, want job.Status, timeout time.Duration) *job.Job {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	var (
		j   *job.Job
		err error
	)
	if want.Finished() {
		j, err = q.Wait(ctx, id)
	} else {
		j, err = poll(ctx, q, id, want)
	}
	switch {
	case err == nil && j.Status == want:
		return j
	case err == nil:
		tb.Fatalf("rjqtest: job %s: want status %s, it ended %s\n%s", id, want, j.Status, describe(j))
	case errors.Is(err, context.DeadlineExceeded) && tb.Context().Err() == nil:
		tb.Fatalf("rjqtest: job %s: want status %s within %v, it is %s", id, want, timeout, current(tb, q, id))
	default:
		tb.Fatalf("rjqtest: job %s: want status %s: %v", id, want, err)
	}
	return nil
}

// poll reads the job until it has status want or a final one, or ctx ends.
func poll(ctx context.Context, q *queue.Queue, id string, want job.Status) (*job.Job, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		jobs, err := q.GetJob(ctx, id)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, err
		case len(jobs) == 0:
			return nil, fmt.Errorf("%w: %s", job.ErrNotFound, id)
		case jobs[0].Status == want || jobs[0].Status.Finished():
			return jobs[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// current describes the job as it is now, for a wait that timed out.
func current(tb testing.TB, q *queue.Queue, id string) string {
	ctx, cancel := context.WithTimeout(tb.Context(), 10*time.Second)
	defer cancel()
	jobs, err := q.GetJob(ctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("unknown (reading it failed: %v)", err)
	case len(jobs) == 0:
		return "not in the queue"
	}
	return string(jobs[0].Status) + "\n" + describe(jobs[0])
}

// describe says where a job got to: its counters and its last log entries, oldest first.
func describe(j *job.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  name %q, processCount %d, retryCount %d of retryMax %d, progress %v, dateEnable %s\n",
		j.Name, j.ProcessCount, j.RetryCount, j.RetryMax, j.Progress, j.DateEnable.Format(time.RFC3339Nano))
	log := j.Log
	if len(log) > lastEntries {
		fmt.Fprintf(&b, "  last %d of %d log entries:\n", lastEntries, len(log))
		log = log[len(log)-lastEntries:]
	} else {
		fmt.Fprintf(&b, "  log:\n")
	}
	for _, e := range log {
		fmt.Fprintf(&b, "    %s %-11s %-10s %s", e.Date.Format("15:04:05.000"), e.Type, e.Status, e.Message)
		if e.ErrorMessage != "" {
			fmt.Fprintf(&b, ": %s", e.ErrorMessage)
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
