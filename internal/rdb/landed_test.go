package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// workerTable makes the table "jobs" of a database of the test's own, and returns it as
// the queue "worker:a" writes it (logs of 100 entries at most), with its session and
// database.
func workerTable(t *testing.T) (*rdb.Table, *r.Session, string) {
	t.Helper()
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(context.Background(), dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	return &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "worker:a", LimitJobLogs: 100}, s, db
}

// An outcome whose answer was lost landed, and the job was claimed again by another
// queue before the completer looked: the job no longer carries this queue's stamp, but
// its log holds the outcome's entry, so the outcome counts as written (its event is
// raised, no false warning). A run the review failed instead does not.
func TestAnOutcomeThatLandedBeforeAClaimElsewhereCountsAsWritten(t *testing.T) {
	tbl, s, db := workerTable(t)
	ctx := context.Background()
	active := func() *job.Job {
		j := job.New(nil, job.DefaultOptions())
		j.Status, j.ProcessCount, j.QueueID, j.DateStarted = job.Active, 1, "worker:a", time.Now()
		_, err := r.DB(db).Table("jobs").Insert(j.Document()).RunWrite(s)
		require.NoError(t, err)
		return j
	}
	outcome := func(j *job.Job, at time.Time) rdb.Outcome {
		e := rdb.NewLog(j, "worker:a", nil, job.MessageFailed, job.Warning, job.Failed)
		e.Date = at
		return rdb.Outcome{ID: j.ID, ProcessCount: 1, Status: job.Failed, DateFinished: at, Entry: e,
			Trunc: rdb.TruncatedLog(j, "worker:a", 100, job.Failed), LogLen: 0}
	}
	claimElsewhere := func(id string) {
		_, err := r.DB(db).Table("jobs").Get(id).Update(map[string]any{
			docfmt.Status: "active", docfmt.ProcessCount: 2, docfmt.QueueID: "worker:b"}).RunWrite(s)
		require.NoError(t, err)
	}

	landed := active()
	at := time.Now().UTC().Truncate(time.Millisecond)
	o := outcome(landed, at)
	done, err := tbl.Finish(ctx, []rdb.Outcome{o})
	require.NoError(t, err)
	require.Equal(t, []rdb.RunKey{o.Key()}, done, "the first try lands (its answer, in the soak, was lost)")
	claimElsewhere(landed.ID)

	reviewed := active()
	_, err = r.DB(db).Table("jobs").Get(reviewed.ID).Update(map[string]any{
		docfmt.Status: "failed", docfmt.QueueID: "master:m",
		docfmt.Log: r.Row.Field(docfmt.Log).Append(map[string]any{"date": at, "queueId": "master:m", "processCount": 1,
			"status": "failed", "message": rdb.MessageOrphan, "type": "warning"}),
	}).RunWrite(s)
	require.NoError(t, err)
	claimElsewhere(reviewed.ID)

	got, err := tbl.Landed(ctx, []rdb.Outcome{o, outcome(reviewed, at)})
	require.NoError(t, err)
	assert.Equal(t, []rdb.RunKey{o.Key()}, got)
}
