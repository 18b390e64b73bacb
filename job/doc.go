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
//
// # Payloads
//
// A job's payload (Data), a handler's result and a log entry's data are stored by
// encoding/json's rules: a struct as an object keyed by its json names (the `json` tag,
// with `-`, omitempty, omitzero and `,string`; embedded structs promoted; json.Marshaler
// and encoding.TextMarshaler called), so that a Node.js worker, rjq list --field and the
// dashboard see the names your tags say. A `rethinkdb` (or `gorethink`) tag, where a field
// has one, wins, so structs written for rethinkdb-go keep their names. Two types stay
// RethinkDB's own: a time.Time is stored as a time (a Date in Node.js), the zero time as
// null (left out under omitempty or omitzero), and a []byte as binary. DataAs, Result and
// queue.HandlerFor decode by the same names; a document stored by Go field name (before
// v0.3) still decodes. What a document cannot hold exactly is refused when the job is
// added, with the field's path: NaN, infinities, integers beyond ±2^53, invalid UTF-8,
// times outside the years 1678 to 2261, funcs and channels (see CheckValue). A handler
// result that cannot be stored completes its job without it, and Result says why
// (ErrResultNotStored).
//
// # Options and their defaults
//
// Every zero field of Options means the original library's default (DefaultOptions), in
// New, in a queue's JobOptions and in a schedule's options alike; NoRetries says "no
// retries". The setters (SetRetryMax, SetRetryDelay, …) take exact values.
//
// # For storage layers and tools
//
// A few exported names serve the code that reads and writes the table (the queue's own
// storage, tools that write a queue's table directly, a fake in tests); application code
// does not need them:
//
//   - Job.Document and FromDocument: a job as the Node.js library stores it, and back;
//   - LogEntry.Document, LogEntryFromDocument and LogEntry's WithDuration, WithError and
//     WithoutData: a log entry's stored form (an entry read from the database keeps,
//     hidden, which optional fields it had and the fields of other writers, so that it is
//     written back as it was);
//   - Store and Job.Attach: how a queue saves the jobs it hands out (Update, AddLog,
//     UpdateProgress); a Store of your own serves a fake in tests;
//   - Job.MarkDuplicate: how a queue marks the jobs AddJob returns in place of those it
//     was given (see Duplicate);
//   - StateDocumentID and the Message constants (the log messages both libraries write)
//     and ResultNotStoredPrefix, for code that reads a table or a job's log.
//
// Everything else exported is for applications: New and the setters, Validate (on Job and
// Options) and WithDefaults, CheckValue, ValidID and UniqueID, Backoff.Delay,
// Priority.Valid, Status.Valid and Status.Finished, the default option values and the
// error values (for errors.Is).
package job
