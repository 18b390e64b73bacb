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
// millisecond within a process, which keeps the claim query fast (see clock.go). The job
// document's mapping, and every query, lives in the library's storage layer
// (internal/rdb), but for a log entry's (LogEntry.Document, LogEntryFromDocument), which
// needs what an entry carries beyond its fields. This package imports neither the driver
// nor any internal package of the library.
//
// # Beyond the contract
//
// Besides the names of the API contract and the additions (unique keys, backoff,
// results), the package exports a few things users need:
//
//   - New, to build a job away from a queue (a producer that batches jobs); AddJob
//     attaches it.
//   - Store and Job.Attach, the typed seam through which a queue saves the jobs it hands
//     out and decodes their payloads and results; a Store of your own (a fake in tests)
//     serves code that calls Update, AddLog, UpdateProgress, DataAs or Result.
//   - LogEntry.Document, LogEntryFromDocument and LogEntry's WithDuration, WithError and
//     WithoutData: a log entry's stored form, for the storage layer. They live here
//     because an entry read from the database keeps, hidden, which optional fields it had
//     and the fields of other writers, so that it is written back as it was.
//   - Validate (on Job and Options) and WithDefaults, to check input before it reaches a
//     queue; AddJob and SetJobOptions call them.
//   - CheckValue, to check early that a payload can be stored; AddJob checks it too.
//   - ValidID and UniqueID, to check an id before GetJob and to find a unique key's job.
//   - Backoff.Delay, to see what a retry policy waits.
//   - Priority.Valid, Status.Valid and Status.Finished, for code that reads jobs.
//   - The Message constants, the log messages the original library writes, for code that
//     reads a job's log; StateDocumentID, for tools that read a queue's table directly.
//   - The default option values (DefaultTimeout and the others DefaultOptions returns) and
//     the error values, for errors.Is.
package job
