package listing

import (
	"errors"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Shown is a job as the tools show it in JSON (rjq show --json, the dashboard's job
// page): its stored document (the database's camelCase names, durations in milliseconds,
// times in UTC), and beside it priorityName, its runs (see Runs) and, for a completed job,
// result (the handler's result) or resultError (why it was not stored).
func Shown(j *job.Job) map[string]any {
	doc := j.Document()
	doc["priorityName"] = j.Priority.String()
	_, runs := Runs(j)
	if runs == nil {
		runs = []*Run{}
	}
	doc["runs"] = runs
	if j.Status == job.Completed {
		var result any
		switch err := j.Result(&result); {
		case err == nil:
			doc["result"] = result
		case !errors.Is(err, job.ErrNoResult):
			doc["resultError"] = err.Error()
		}
	}
	return doc
}
