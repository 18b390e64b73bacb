// Package queue is a persistent, distributed job queue backed by RethinkDB, a Go port of
// the Node.js library rethinkdb-job-queue that reads and writes the same tables, so Go and
// Node.js workers can share one queue.
//
// A Queue owns one table (its name) in one database. New dials the server at once and
// prepares the database, the table and its indexes in the background; every method waits
// for that, and Ready waits for it alone:
//
//	q, err := queue.New(ctx, &queue.ConnectOptions{Address: "db1:28015"}, &queue.Options{Name: "mail"})
//	if err != nil { ... }
//	defer q.Stop(ctx)
//	j := q.CreateJob(Welcome{To: "ann@example.com"}).SetName("welcome").SetPriority(job.High)
//	_, err = q.AddJob(ctx, j)
//
// Payloads are stored by their json names (see "Payloads" in package job). A Kind binds a
// job name to its payload's type, for the code that adds jobs and the worker alike, and a
// worker routes jobs by name with a Mux:
//
//	var welcome = queue.NewKind[Welcome]("welcome")
//	_, err = q.AddJob(ctx, welcome.Job(q, Welcome{To: "ann@example.com"}))
//
//	mux := queue.NewMux()
//	welcome.Handle(mux, sendWelcome) // func(ctx, *job.Job, Welcome) (any, error)
//	err = q.Process(mux.Handler())
//
// ParseURL reads connection settings from one URL (rethinkdb://user:pass@host:port/db).
// Code that only adds jobs can take an Adder, which rjqtest.Adder fakes in unit tests.
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
// Process runs a Handler on the queue's jobs, up to Concurrency at once, until Stop, in
// three parts: a producer claims due jobs for the free slots, an
// executor runs each with its context and timeout, and a completer writes the outcomes.
// Claims and outcome writes go to the server at the same time, each in batches: one
// update claims every job a round takes, as a compare-and-set per job (it is still as it
// was read, and due), so no job goes to two handlers, whatever number of processes
// compete; one update writes the outcomes of the runs that ended meanwhile, each guarded
// by ownership (the job is still active in the run that claimed it). Jobs are taken
// highest priority first, then oldest dateEnable, then oldest dateCreated.
//
// Several workers of one table (processes, each with its Queue) share its jobs by id, so
// that they seldom aim at the same ones: each claims its own share first within a
// priority, but never a job of a lower priority while the head of the table holds one of
// a higher priority in another's share. The bound, with W workers of concurrency C: a job
// starts at most 2 × W × C starts (the jobs in flight or read ahead) after any job of a
// lower priority that was claimable with it, whatever the number of shards; a delayed job
// or a retry counts from when it falls due. The bound is kept by the claims, the order
// the workers choose; handlers start in that order but for the Go scheduler's delays,
// which an overloaded machine can stretch. Measured on RethinkDB 2.4.4 with rjqbench
// -priority, 0 starts beyond the bound in every run (docs/performance.md). Without a
// changefeed, a job another process adds is seen at the next read, half a second at most
// (see below); a Node.js worker on the same table claims by the original's rules.
//
// A busy queue reads the table once every few rounds: a read takes up to four times the
// concurrency, and the rounds that follow claim from what it found while it is fresh (half
// a second; two seconds with the changefeed, whose hints bring the jobs added or made
// claimable meanwhile into the claims' order, so that a higher priority still goes
// first). An idle queue reads nothing until a job comes: a job this queue adds, or one
// that another process adds or enables (learned from the changefeed), is claimed by id
// within milliseconds. When several idle queues (processes) see the same job on their
// feeds, they take turns by rank among the table's live workers (Workers), so that one
// added job costs one claim, not one per queue. An idle queue also wakes itself when its
// next delayed job falls due, with no review needed. How this was measured, and what it
// costs, is in docs/performance.md.
//
// A job's handler gets a context that ends when the job is cancelled (here or in another
// process), when its timeout passes (the job is failed then), or when Stop gives up
// waiting. Failed jobs are retried RetryMax times, each after RetryDelay × the retry count;
// repeating jobs run again after RepeatDelay. Job.UpdateProgress restarts the timeout;
// progress reported faster than every 200 ms is coalesced, the last value written when
// the interval has passed.
//
// # Bad data and lost answers
//
// A document in the table that this library cannot process (written by hand or by
// another tool: a timeout that is not a number, a log that is not an array, a missing
// retry count) is never claimed: it is left as it is, reported once by an error event
// (wrapping job.ErrInvalidDocument) and a log line with its id, and skipped by the claims
// that follow, so it never blocks the jobs behind it. A review fails such a document like
// any orphan, replacing what it cannot read.
//
// A write whose answer is lost (the server or the network failed after the write) has an
// unknown effect, and rethinkdb-go sends a query again on a new connection after a
// connection error. Every write of the processing loop is safe to repeat: an outcome is
// written only while the run owns the job and is recognized by its stamp (dateFinished and
// queueId) when a first try landed; a claim whose answer was lost is found by the jobs
// active in this queue's name, and they run. AddJob recognizes its own documents the same
// way. Payloads, results, names and options that cannot be stored faithfully (a func or
// chan, NaN, an integer beyond 2^53, a time past 2262, invalid UTF-8, a cycle) are refused
// with an error wrapping job.ErrInvalid before anything is written; a handler result of
// that kind completes the job without it, and job.Job.Result says why. Outcomes are told
// apart by job and run (processCount): a run's outcome that landed is never taken for the
// next run's of the same job.
//
// # Delivery: once, or at least once
//
// A claim is a compare-and-set, so no two workers ever hold one run of a job, and a
// job's handler runs once while its worker can reach the table. A run holds a lease (with
// heartbeats: Heartbeat + 1 s, renewed every Heartbeat/4, so that it never has less than
// Heartbeat/2 + 1 s left, 6 s by default; without heartbeats: the job's timeout). When a
// worker cannot reach the table for longer than its runs' leases have left (it crashed,
// or was cut off from the cluster: a long failover, a network partition), a Queue Master
// fails its running jobs, and they run again elsewhere; the cut-off run's outcome,
// written late, is dropped, since the run no longer owns the job. So delivery is exactly
// once while failures last less than Heartbeat/2 + 1 s (and up to Heartbeat + 1 s for a
// run renewed or claimed just before), and at least once beyond.
// A run whose handler has returned keeps its lease renewed until its outcome is written,
// and the outcome write is retried before the lease ends, never after; a connection that
// goes silent (no reset, no answer) is given up within a quarter of the lease, and the
// queue then replaces its session's connections, as it does whenever a query of its
// session runs out of its context's time (for a session it dialed itself; a
// ConnectOptions.Session of yours is yours to mend). The jobs a claim whose answer was
// lost may hold keep their leases until the queue finds them and runs them. Measured with cmd/rjqsoak: kills,
// cuts, partitions (reset and silent) and server restarts, no job lost, stranded or run
// twice but for the kills and the handlers' failures. Beyond the lease:
// make handlers idempotent, or give them a lease longer than the failures they must
// ride out (the default, 11 s, outlasts a primary's failover in a RethinkDB cluster,
// measured at 2 to 5 s). The job's log tells the two apart: a run that followed an
// expired lease comes after the entry "Master: Job processing failed".
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
// The claim never lets a delayed job of high priority hold back due jobs (the original's
// issue #83); the original read the first jobs of the index and dropped those not due.
// Claims read an index of this library's own, rjqIndexClaimDesc, beside the original's five;
// the Node.js library ignores it. A failed job waits RetryDelay × its
// new retry count, as the original documents (its code retried the first failure at
// once). A job completed by another queue is raised as completed, not progress. An outcome
// is written only while the run still owns the job, so a job cancelled or recovered
// meanwhile is not overwritten. Log entries are written as the original writes them: the
// completion entry's message is "completed" (the status name, as its job-completed.js
// passes it), and the claim and cancel entries carry no "data" field.
//
// # Beyond the original
//
// Typed kinds (Kind), unique jobs and debounce (job.SetUniqueKey, SetUniqueFor,
// SetDebounce), start deadlines (job.SetDeadline), Wait and job.Result, heartbeats and
// Workers, the hand-back of the jobs a Stop cuts off, backoff (job.SetBackoff,
// Options.RetryBackoff), OnTerminated, cron schedules (Schedule), rate limits, time
// windows and running caps per job name (SetLimit), groups with running and rate limits
// that take turns (job.SetGroup, SetGroupLimit, SetGroupRate, Groups), sequences
// (job.SetSequence, Sequences), workflows (job.SetDependsOn, job.ParentResult, Children)
// and metrics (Options.Metrics). Each keeps the table readable by the Node.js library:
// new data lives in extra fields or side tables ("<queue>_workers", "<queue>_schedules",
// "<queue>_limits", "<queue>_slots", "<queue>_stats"); docs/nodejs.md says what a Node.js
// worker does when it meets each, and the guides in docs/ show each at work.
package queue
