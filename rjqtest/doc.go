// Package rjqtest helps test the code that uses a queue: handlers without a server, and
// whole programs against one.
//
// Run runs a queue.Handler on a job the way a queue's worker runs it, with no database:
// the job is claimed (status active, processCount one more, dateStarted now, the claim's
// log entry), its saves (Job.UpdateProgress, Job.AddLog, Job.Update) go to a store in
// memory that records them, its timeout cancels the handler's context with the cause
// job.ErrTimeout, a panic fails it, and the Result says what the queue would have
// written: the Outcome, the job as it would be left, the progress reports and the log
// entries the handler added. The retry, repeat and lease policy and the log entries come
// from the code a queue runs, and a test runs handlers both here and in a real queue to
// keep the rest alike, so a handler that passes here meets no surprise in production but
// the database's (other workers, cancels from elsewhere, lost connections).
//
// A workflow's child (a job with parents, job.SetDependsOn) runs as released once its
// parents completed: WithParentResult gives each parent's result, stored as a queue
// stores it, for the handler's job.Job.ParentResult to decode; a parent given none
// completed with none. Run refuses the parents AddJob refuses (ids that are not job ids,
// the job itself, an id given twice in the field), with AddJob's errors, and a result
// given for a job that is not a parent.
//
// RequireAdded, RequireStatus and RequireCompleted serve tests that run a real queue:
// they add jobs and wait for outcomes, and a failure says where the job got to and what
// its last log entries say, rather than only that a wait timed out.
package rjqtest
