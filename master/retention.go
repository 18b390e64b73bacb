package master

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// Finished jobs are removed in slices, so that a review that removes hundreds of thousands
// never starves processing: at most sliceSize jobs per query, through the index of
// finished jobs by dateFinished, with a pause after each slice six times as long as the
// slice took, so that removal takes at most a seventh of one query stream of the server
// (measured on RethinkDB 2.4.4, removing 770,000 of a million finished jobs with a pause
// four times as long: processing at concurrency 50 kept 79 % of its rate).
// One master removes at a time, holding a lease in the stats table that each slice
// renews; the others skip removal while it lasts. A review cut short (Stop, a crash)
// leaves what it did not reach to the next, which starts again from the oldest job.
const (
	sliceSize  = 1000
	pauseRatio = 6
	minPause   = 10 * time.Millisecond
	// retentionLease is how long a master may go without renewing its hold on removal;
	// a slice renews it, and a master that died frees it after this long.
	retentionLease = time.Minute
	// progressEvery is how many slices pass between two progress lines in the log.
	progressEvery = 50
)

// removeFinished removes the finished jobs older than period (every one for a period
// of zero) in slices, and returns how many it removed; 0 when another master removes.
func removeFinished(ctx context.Context, t Target, tbl *rdb.Table, period time.Duration) (int, error) {
	var upTo time.Time
	if period > 0 {
		upTo = time.Now().Add(-period)
	}
	// The lease lives in the stats table: a queue with nothing to remove needs neither.
	first, err := tbl.FirstFinished(ctx)
	if err != nil || first.IsZero() || (!upTo.IsZero() && !first.Before(upTo)) {
		return 0, err
	}
	if err := t.assertStats(ctx); err != nil {
		return 0, err
	}
	log := t.logger()
	held, err := tbl.TakeRetention(ctx, retentionLease)
	if err != nil || !held {
		return 0, err
	}
	defer func() {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tbl.ReleaseRetention(release)
	}()
	removed := 0
	for slice := 1; ; slice++ {
		start := time.Now()
		s, err := tbl.RemoveFinishedSlice(ctx, upTo, sliceSize)
		for _, n := range s.Removed {
			removed += n
		}
		if err != nil {
			return removed, err
		}
		if !s.Full {
			if slice > progressEvery {
				log.Info("removing finished jobs: done", "removed", removed)
			}
			return removed, nil
		}
		if slice%progressEvery == 0 {
			log.Info("removing finished jobs", "removed", removed)
			if held, err := tbl.TakeRetention(ctx, retentionLease); err != nil || !held {
				return removed, fmt.Errorf("the hold on removal was lost: %w", err)
			}
		}
		select {
		case <-time.After(max(pauseRatio*time.Since(start), minPause)):
		case <-ctx.Done():
			return removed, ctx.Err()
		}
	}
}
