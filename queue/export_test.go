package queue

// SetExactBelow makes Summary count every job only in tables smaller than n, so that a
// test can see the tally at work on a small table.
func SetExactBelow(q *Queue, n int) { q.e.SetExactBelow(n) }
