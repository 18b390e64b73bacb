package engine

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// maxSequenceRead bounds the unfinished jobs of sequences SequenceCounts reads, as
// maxGroupRead does for groups.
const maxSequenceRead = maxGroupRead

// SequenceCounts is queue.Queue.Sequences' read of the jobs of each sequence
// (rdb.Table.SequenceCounts).
func (q *Queue) SequenceCounts(ctx context.Context) (map[string]rdb.SequenceCount, bool, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer end()
	return q.db.SequenceCounts(ctx, maxSequenceRead)
}

// sequenceSpacing places the jobs of a sequence that AddJob adds a millisecond of
// dateEnable after the job ahead of them that waits: the jobs of one key then never
// share a millisecond, and the claim index, which orders the jobs of one millisecond by
// id, no longer puts a key's later jobs among the first jobs of other keys, where every
// claim would read them and pass them over (a key runs one job at a time, so the
// millisecond costs it nothing). Only the order changes: a job's turn is still its
// place (rdb.TurnOf).
type sequenceSpacing struct {
	last map[string]time.Time // the dateEnable of the key's last waiting job placed
	now  time.Time
}

// newSequenceSpacing starts from the keys' tails that wait (a tail that runs or is to be
// retried holds no place in the claim order a new job must follow).
func newSequenceSpacing(tails map[string]rdb.SequenceTail, now time.Time) *sequenceSpacing {
	s := &sequenceSpacing{last: make(map[string]time.Time, len(tails)), now: now}
	for k, t := range tails {
		if !t.Waiting.IsZero() {
			s.last[k] = s.capped(t.Waiting)
		}
	}
	return s
}

// capped is at, or rdb.TurnsAhead from now when at is later: a job ahead delayed for a
// day, then cancelled, must not hold the jobs behind it for a day.
func (s *sequenceSpacing) capped(at time.Time) time.Time {
	if limit := s.now.Add(rdb.TurnsAhead); at.After(limit) {
		return limit
	}
	return at
}

// place returns the dateEnable of a waiting job of key that would start at at: a
// millisecond after the key's last placed job when that is later, unless the job keeps
// its time (fixed: delayed or debounced by the caller).
func (s *sequenceSpacing) place(key string, at time.Time, fixed bool) time.Time {
	if last, ok := s.last[key]; ok && !fixed {
		if next := last.Add(time.Millisecond); next.After(at) {
			at = next
		}
	}
	s.last[key] = s.capped(at)
	return at
}
