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
// # Processing
//
// Process runs a Handler on the queue's jobs, up to Concurrency at once, until Stop. One
// loop per queue claims as many due jobs as it has free slots in one query, highest
// priority first, then oldest dateEnable, then oldest dateCreated; a conditional update
// makes sure no job goes to two handlers, whatever number of processes compete. The loop
// claims again when a slot frees, when this queue adds or reanimates a job, when another
// queue adds one (through the changefeed), after a review, and when the next delayed job
// falls due: an idle queue wakes itself for it, with no review needed.
//
// A job's handler gets a context that ends when the job is cancelled (here or in another
// process), when its timeout passes (the job is failed then), or when Stop gives up
// waiting. Failed jobs are retried RetryMax times, each after RetryDelay × the retry count;
// repeating jobs run again after RepeatDelay. Job.UpdateProgress restarts the timeout.
//
// # Queue Master
//
// A queue whose MasterInterval is positive (the default) reviews the table on that
// interval: jobs left active by a crashed or hung worker are failed or terminated, finished
// jobs past RemoveFinishedJobs are removed, and every queue is told to claim again. Review
// runs it on demand; a queue that is not a master reviews once when it starts processing.
//
// # Events
//
// Events returns a channel of the queue's events, filtered by type. Delivery never blocks
// the queue: a subscriber that falls EventBuffer events behind loses the newer ones, and
// DroppedEvents counts them.
//
// With the changefeed on (the default), the events of every other queue on the table (in
// any process, in Go or Node.js) arrive too, with Local false and the other queue's id; a
// queue never raises its own change twice. Pause and Resume with global true pause and
// resume every queue through the State Document. When the feed fails (server restart,
// network cut) the queue raises an error event and reopens it with backoff, re-creating
// its database, table and indexes if the server lost them, then claims again. Processing
// is never wrong without the feed, only later: a queue whose feed is off or down finds the
// jobs other processes add or enable when it next claims (after its own work, its own
// adds, or a delayed job falling due) or after the next review; and a handler whose job
// another process cancels runs to its end, its outcome then dropped, instead of having
// its context cancelled.
//
// # Differences from the Node.js library
//
// GetJob, CancelJob, ReanimateJob and RemoveJob report ids that are not in the queue
// instead of ignoring them, and the three writers then write nothing. Job.Update replaces
// the document, so a field deleted from Job.Fields is deleted (the original merged, which
// kept it). Job.UpdateProgress checks that the job is still active in the database. Reset
// keeps the State Document. CancelJob without a reason logs DefaultCancelReason.
//
// The claim reads each priority's due jobs as an index range, so a delayed job of high
// priority never holds back due jobs (the original's issue #83); the original read the
// first jobs of the index and dropped those not due. A failed job waits RetryDelay × its
// new retry count, as the original documents (its code retried the first failure at
// once). A job completed by another queue is raised as completed, not progress. An outcome
// is written only while the run still owns the job, so a job cancelled or recovered
// meanwhile is not overwritten. The completion log message is "Job completed successfully".
package queue
