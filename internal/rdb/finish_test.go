package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The outcomes of one write whose log entries differ by their duration alone share one
// entry in the write, each with its duration; entries that differ otherwise (a result,
// an error) go whole. Whichever way, each job's log ends with its own outcome's entry,
// as Document makes it.
func TestOutcomesOfOneWriteEachLogTheirOwnEntry(t *testing.T) {
	tbl, s, db := workerTable(t)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	var outs []rdb.Outcome
	add := func(entry func(j *job.Job) job.LogEntry) {
		j := job.New(nil, job.DefaultOptions())
		j.Status, j.ProcessCount, j.QueueID, j.DateStarted = job.Active, 1, "worker:a", at.Add(-time.Second)
		_, err := r.DB(db).Table("jobs").Insert(j.Document()).RunWrite(s)
		require.NoError(t, err)
		e := entry(j)
		e.Date = at
		outs = append(outs, rdb.Outcome{ID: j.ID, ProcessCount: 1, Status: job.Completed, DateFinished: at, Entry: e,
			Trunc: rdb.TruncatedLog(j, "worker:a", 100, job.Completed), LogLen: 1})
	}
	completed := func(d time.Duration, result any) func(j *job.Job) job.LogEntry {
		return func(j *job.Job) job.LogEntry {
			return rdb.NewLog(j, "worker:a", result, job.MessageCompleted, job.Information, job.Completed).WithDuration(d)
		}
	}
	add(completed(12*time.Millisecond, nil))
	add(completed(3400*time.Millisecond, nil))
	add(completed(5*time.Millisecond, map[string]any{"rows": 3.0}))
	add(func(j *job.Job) job.LogEntry {
		return rdb.NewLog(j, "worker:a", nil, "an error", job.Information, job.Completed).WithDuration(7*time.Millisecond).WithError("boom", "at f")
	})
	add(completed(0, nil))
	add(func(j *job.Job) job.LogEntry { // no duration at all
		return rdb.NewLog(j, "worker:a", nil, job.MessageCompleted, job.Information, job.Completed)
	})

	done, err := tbl.Finish(ctx, outs)
	require.NoError(t, err)
	require.Len(t, done, len(outs), "every outcome lands")
	for _, o := range outs {
		var doc map[string]any
		require.NoError(t, r.DB(db).Table("jobs").Get(o.ID).ReadOne(&doc, s))
		log, _ := doc["log"].([]any)
		require.NotEmpty(t, log, o.ID)
		got, _ := log[len(log)-1].(map[string]any)
		want := o.Entry.Document()
		require.Len(t, got, len(want), "the entry's fields: %v", got)
		for k, w := range want {
			g := got[k]
			switch w := w.(type) {
			case int64:
				n, ok := g.(float64)
				assert.True(t, ok && n == float64(w), "%s: %v, want %v", k, g, w)
			case int:
				n, ok := g.(float64)
				assert.True(t, ok && n == float64(w), "%s: %v, want %v", k, g, w)
			case time.Time:
				gt, ok := g.(time.Time)
				assert.True(t, ok && gt.Equal(w), "%s: %v, want %v", k, g, w)
			default:
				assert.Equal(t, w, g, k)
			}
		}
	}
}
