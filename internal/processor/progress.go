package processor

import (
	"context"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// progressInterval is the shortest time between two progress writes of one run. A handler
// that reports progress in a tight loop would otherwise send a write per call, each with
// its own flush; calls that come sooner are coalesced, and the last value is written when
// the interval has passed (or superseded by the run's outcome, which sets the progress
// itself).
const progressInterval = 200 * time.Millisecond

// progressState throttles one run's progress writes.
type progressState struct {
	mu        sync.Mutex
	lastWrite time.Time
	writing   bool
	// pending is the latest coalesced value and the job it was reported on, written by
	// timer.
	pending    float64
	pendingJob *job.Job
	timer      *time.Timer
	// tracked counts the trailing writes scheduled, for Stop to wait for.
	tracked *sync.WaitGroup
	stopped bool
}

// coalesce takes a progress report. It returns true when the value was kept for a later
// write (trailing, which the caller's run then owes); false when the caller is to write
// it now, and call wrote afterwards.
func (s *progressState) coalesce(j *job.Job, percent float64, trailing func(), tracked *sync.WaitGroup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	wait := progressInterval - time.Since(s.lastWrite)
	if !s.writing && wait <= 0 && s.timer == nil {
		s.writing = true
		return false
	}
	s.pending, s.pendingJob = percent, j
	if s.timer == nil {
		s.schedule(max(wait, 0), trailing, tracked)
	}
	return true
}

// schedule arms the trailing write; s.mu must be held.
func (s *progressState) schedule(after time.Duration, trailing func(), tracked *sync.WaitGroup) {
	s.tracked = tracked
	tracked.Add(1)
	s.timer = time.AfterFunc(after, func() {
		defer tracked.Done()
		trailing()
	})
}

// take hands the pending value to the trailing write; ok is false when the run ended.
func (s *progressState) take() (j *job.Job, percent float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if s.stopped || s.pendingJob == nil || s.writing {
		return nil, 0, false
	}
	j, percent = s.pendingJob, s.pending
	s.pendingJob = nil
	s.writing = true
	return j, percent, true
}

// wrote records that a write ended; a value that came meanwhile gets a trailing write.
func (s *progressState) wrote(trailing func(), tracked *sync.WaitGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writing = false
	s.lastWrite = time.Now()
	if s.pendingJob != nil && s.timer == nil && !s.stopped {
		s.schedule(progressInterval, trailing, tracked)
	}
}

// stop ends the throttle when the run settles: the outcome sets the progress now.
func (s *progressState) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil && s.timer.Stop() {
		// The callback will not run, so its Done is owed here.
		s.timer = nil
		s.tracked.Done()
	}
}

// writeFunc writes a progress report; with refresh, j is updated to the stored job.
type writeFunc func(ctx context.Context, j *job.Job, percent float64, refresh bool) error

// progress writes a run's progress report now, or coalesces it with the ones around it.
func (e *executor) progress(ctx context.Context, rn *run, j *job.Job, percent float64, write writeFunc) error {
	var trailing func()
	trailing = func() {
		tj, v, ok := rn.progress.take()
		if !ok {
			return
		}
		// A trailing write runs beside the handler, which owns j: it leaves j alone.
		if err := write(e.p.hard, tj, v, false); err != nil {
			e.p.cfg.Log.InfoContext(rn.ctx, "a coalesced progress write failed", "job", tj.ID, "err", err)
		}
		rn.progress.wrote(trailing, &e.handlers)
	}
	if rn.progress.coalesce(j, percent, trailing, &e.handlers) {
		j.Progress = percent
		e.touched(j.ID, j.ProcessCount)
		return nil
	}
	err := write(ctx, j, percent, true)
	rn.progress.wrote(trailing, &e.handlers)
	return err
}
