// Package queue is a persistent, distributed job queue backed by RethinkDB, a Go port of
// the Node.js library rethinkdb-job-queue that reads and writes the same tables, so Go and
// Node.js workers can share one queue.
//
// A Queue owns one table (its name) in one database. New dials the server at once and
// prepares the database, the table and its indexes in the background; every method waits
// for that, and Ready waits for it alone:
//
//	q, err := queue.New(ctx, &queue.ConnectOptions{Host: "db1"}, &queue.Options{Name: "mail"})
//	if err != nil { ... }
//	defer q.Stop(ctx)
//	j := q.CreateJob(map[string]any{"to": "ann@example.com"}).SetPriority(job.High)
//	_, err = q.AddJob(ctx, j)
//
// # Errors
//
// Calls that take job ids validate them first and change nothing when one is invalid
// (job.ErrInvalidID) or not in the queue (job.ErrNotFound): a batch is written whole or
// not at all. Every error about the caller's input wraps job.ErrInvalid; ErrStopped follows
// Stop; ErrConnect means no server answered.
//
// # Events
//
// Events returns a channel of the queue's events, filtered by type. Delivery never blocks
// the queue: a subscriber that falls EventBuffer events behind loses the newer ones, and
// DroppedEvents counts them.
//
// # Differences from the Node.js library
//
// GetJob, CancelJob, ReanimateJob and RemoveJob report ids that are not in the queue
// instead of ignoring them, and the three writers then write nothing. Job.Update replaces
// the document, so a field deleted from Job.Fields is deleted (the original merged, which
// kept it). Job.UpdateProgress checks that the job is still active in the database. Reset
// keeps the State Document. CancelJob without a reason logs DefaultCancelReason.
package queue
