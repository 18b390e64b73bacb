// Package job is the job of rethinkdb-job-queue: its options and their validation, its
// statuses and priorities, its log, and its mapping to the document the Node.js
// rethinkdb-job-queue library stores, so that Go and Node.js workers can share a queue.
//
// Jobs are made by Queue.CreateJob (or New), configured with the chainable setters, and
// added with Queue.AddJob:
//
//	j := q.CreateJob(payload).SetName("nightly-report").SetPriority(job.High).SetRetryMax(5)
//	if _, err := q.AddJob(ctx, j); err != nil { ... }
//
// A setter given an invalid value does not apply it; the error is kept, reported by Err,
// and AddJob refuses the job without writing anything. Every such error wraps ErrInvalid
// and the option's own sentinel (ErrInvalidPriority, ErrInvalidTimeout, …).
//
// # The stored document
//
// Durations are stored in whole milliseconds, the priority as its number (highest 10 …
// lowest 60), Repeat as false, true (RepeatForever) or a count, times as RethinkDB times in
// UTC cut to the millisecond, and unset times as null. Fields of the document this package
// does not model are kept in Job.Fields (top level) or inside the log entry, and are
// written back untouched.
//
// Differences from the Node.js library: a job's payload is always the "data" field (Node.js
// spreads an object payload over the top level; read such jobs' fields from Fields), an
// empty name is refused by SetName, and creation times are made distinct to the
// millisecond within a process, which keeps the claim query fast (see clock.go).
package job
