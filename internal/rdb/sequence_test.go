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

// The head of a sequence is its first job, by place, that is not finished; a table
// without the index says so with ErrNoSequenceIndex, and a document of any shape in the
// table neither stops the read nor comes first.
func TestSequenceHeadsAreTheFirstUnfinishedJobs(t *testing.T) {
	ctx := context.Background()
	tbl, s, db := sequenceTable(t)
	if !testserver.Get(t).IsReqlite() {
		// reqlite answers a read of a missing index with a malformed response
		// ("Unexpected response type: 0"), not the server's error.
		_, err := tbl.SequenceHeads(ctx, []string{"a"})
		require.ErrorIs(t, err, rdb.ErrNoSequenceIndex)
	}
	require.NoError(t, tbl.EnsureSequenceIndex(ctx))
	require.NoError(t, tbl.EnsureSequenceIndex(ctx), "twice is fine")
	require.NoError(t, r.DB(db).Table("jobs").IndexWait(rdb.IndexSequence).Exec(s))

	insert := sequenceInserter(t, s, db)
	insert("a", 10, job.Completed)
	a2 := insert("a", 20, job.Failed)
	insert("a", 30, job.Waiting)
	insert("b", 5, job.Cancelled)
	b2 := insert("b", 7, job.Active)
	insert("c", 1, job.Terminated)
	_, err := r.DB(db).Table("jobs").Insert([]any{
		map[string]any{"id": "garbage-1", docfmt.Sequence: "a", docfmt.SequenceAt: "first", "status": "waiting"},
		map[string]any{"id": "garbage-2", docfmt.Sequence: 42, docfmt.SequenceAt: 1, "status": "waiting"},
	}).RunWrite(s)
	require.NoError(t, err)

	heads, err := tbl.SequenceHeads(ctx, []string{"a", "b", "c", "none"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": a2, "b": b2}, headIDs(heads))
	require.NotNil(t, heads["a"].Job, "read as a claim reads it")
	assert.Equal(t, job.Failed, heads["a"].Job.Status)

	_, err = r.DB(db).Table("jobs").Get(a2).Update(map[string]any{"status": "completed", "dateFinished": time.Now()}).RunWrite(s)
	require.NoError(t, err)
	heads, err = tbl.SequenceHeads(ctx, []string{"a"})
	require.NoError(t, err)
	assert.NotEqual(t, a2, headIDs(heads)["a"], "a finished job gives its turn to the next")
	assert.Len(t, heads, 1)
}

func headIDs(heads map[string]rdb.Candidate) map[string]string {
	out := make(map[string]string, len(heads))
	for k, c := range heads {
		out[k], _ = c.ID.(string)
	}
	return out
}

// SequenceCounts counts each sequence's unfinished jobs and names its first; while the
// index is being built it reads the same through the status index. A table without the
// index has none.
func TestSequenceCountsByIndexAndWhileItIsBuilt(t *testing.T) {
	ctx := context.Background()
	tbl, s, db := sequenceTable(t)
	counts, partial, err := tbl.SequenceCounts(ctx, 100)
	require.NoError(t, err, "no index")
	assert.Empty(t, counts)
	assert.False(t, partial)

	buildSequenceIndex(t, tbl)
	insert := sequenceInserter(t, s, db)
	insert("a", 10, job.Completed)
	insert("a", 30, job.Waiting)
	a2 := insert("a", 20, job.Failed)
	insert("a", 40, job.Waiting)
	b1 := insert("b", 7, job.Active)
	insert("b", 5, job.Cancelled)
	_, err = r.DB(db).Table("jobs").Insert([]any{
		map[string]any{"id": "garbage-1", docfmt.Sequence: "a", docfmt.SequenceAt: "first", "status": "waiting"},
		map[string]any{"id": "garbage-2", docfmt.Sequence: 42, docfmt.SequenceAt: 1, "status": "waiting"},
		map[string]any{"id": "plain", "status": "waiting"},
	}).RunWrite(s)
	require.NoError(t, err)
	want := map[string]rdb.SequenceCount{
		"a": {Waiting: 2, Failed: 1, Head: a2, HeadStatus: job.Failed},
		"b": {Active: 1, Head: b1, HeadStatus: job.Active},
	}
	for name, read := range map[string]func(context.Context, int) (map[string]rdb.SequenceCount, bool, error){
		"by the index": tbl.SequenceCounts, "by status": tbl.SequenceCountsByStatus,
	} {
		counts, partial, err := read(ctx, 100)
		require.NoError(t, err, name)
		assert.Equal(t, want, counts, name)
		assert.False(t, partial, name)
	}
	counts, partial, err = tbl.SequenceCounts(ctx, 2)
	require.NoError(t, err)
	assert.True(t, partial, "more than 2")
	assert.Equal(t, map[string]rdb.SequenceCount{"a": {Waiting: 1, Failed: 1, Head: a2, HeadStatus: job.Failed}}, counts)
}

// sequenceInserter returns a function that inserts a job of sequence key at place with
// status into db's table "jobs", and returns its id.
// sequenceTable is a queue table of the test's own, made as dbinit makes it, without the
// index of sequences.
func sequenceTable(t *testing.T) (*rdb.Table, *r.Session, string) {
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(context.Background(), dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	return &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "worker:w", LimitJobLogs: 100}, s, db
}

// buildSequenceIndex makes tbl's index of sequences and waits until it is built.
func buildSequenceIndex(t *testing.T, tbl *rdb.Table) {
	require.NoError(t, tbl.EnsureSequenceIndex(context.Background()))
	require.NoError(t, r.DB(tbl.DB).Table(tbl.Name).IndexWait(rdb.IndexSequence).Exec(tbl.Session))
}

func sequenceInserter(t *testing.T, s *r.Session, db string) func(key string, place int64, status job.Status) string {
	return func(key string, place int64, status job.Status) string {
		j := job.New(nil, job.DefaultOptions()).SetSequence(key)
		j.Status = status
		doc := j.Document()
		doc[docfmt.SequenceAt] = place
		_, err := r.DB(db).Table("jobs").Insert(doc).RunWrite(s)
		require.NoError(t, err)
		return j.ID
	}
}
