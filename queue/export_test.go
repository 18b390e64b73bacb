package queue

import (
	"context"
	"time"
)

// SetExactBelow makes Summary count every job only in tables smaller than n, so that a
// test can see the tally at work on a small table.
func SetExactBelow(q *Queue, n int) { q.e.SetExactBelow(n) }

// ExpireDue runs one tick of the Queue Master's expiry of jobs past their start deadline,
// for a test that needs to know when it looks.
func ExpireDue(ctx context.Context, q *Queue) error { return q.e.ExpireDue(ctx) }

// SetNarrowAfter sets how long q's whole changefeed stays open after its last listener
// of other queues' events has gone.
func SetNarrowAfter(q *Queue, d time.Duration) { q.e.SetNarrowAfter(d) }
