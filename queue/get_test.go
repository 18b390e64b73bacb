package queue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

const unknownID = "5127d082-fe7e-4e88-b1de-7093029695c3"

func TestGetJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	jobs := f.add(t, 3)

	got, err := f.q.GetJob(ctx, jobs[2].ID, jobs[0].ID, jobs[2].ID)
	require.NoError(t, err)
	require.Len(t, got, 2, "repeated ids are dropped")
	assert.Equal(t, jobs[2].ID, got[0].ID, "jobs come in the order of the ids")
	assert.Equal(t, jobs[0].ID, got[1].ID)
	assert.Equal(t, float64(2), got[0].Data, "data read back from the database")
	assert.Equal(t, job.Waiting, got[0].Status)
	assert.True(t, jobs[2].DateCreated.Equal(got[0].DateCreated))

	got, err = f.q.GetJob(ctx, jobs[1].ID, unknownID)
	assert.ErrorIs(t, err, job.ErrNotFound)
	assert.Contains(t, err.Error(), unknownID, "the error names the missing id")
	require.Len(t, got, 1, "the jobs found are returned with the error")
	assert.Equal(t, jobs[1].ID, got[0].ID)

	_, err = f.q.GetJob(ctx)
	assert.ErrorIs(t, err, queue.ErrNoIDs)
	_, err = f.q.GetJob(ctx, "nope")
	assert.ErrorIs(t, err, job.ErrInvalidID)
	assert.ErrorIs(t, err, job.ErrInvalid)
}

func TestFindJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	ann := f.q.CreateJob(map[string]any{"user": "ann", "size": 3})
	bob := f.q.CreateJob(map[string]any{"user": "bob", "size": 5}).SetPriority(job.High)
	old := f.q.CreateJob(map[string]any{"user": "ann", "size": 9})
	_, err := f.q.AddJob(ctx, ann, bob, old)
	require.NoError(t, err)
	// The State Document lives in the same table and must never come back as a job.
	_, err = f.table().Insert(map[string]any{"id": job.StateDocumentID, "queueId": "elsewhere", "state": "active"}).RunWrite(f.raw)
	require.NoError(t, err)

	got, err := f.q.FindJob(ctx, map[string]any{"data": map[string]any{"user": "ann"}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{ann.ID, old.ID}, []string{got[0].ID, got[1].ID}, "oldest first")

	got, err = f.q.FindJob(ctx, map[string]any{"priority": 20})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, bob.ID, got[0].ID)

	got, err = f.q.FindJob(ctx, func(doc r.Term) r.Term { return doc.Field("data").Field("size").Gt(4) })
	require.NoError(t, err)
	assert.Len(t, got, 2)

	got, err = f.q.FindJob(ctx, map[string]any{"queueId": "elsewhere"})
	require.NoError(t, err)
	assert.Empty(t, got, "the State Document is not a job")

	for _, bad := range []any{nil, "status", 42, map[string]string{"a": "b"}, (func(r.Term) r.Term)(nil)} {
		_, err = f.q.FindJob(ctx, bad)
		assert.ErrorIs(t, err, queue.ErrInvalidPredicate, "%T", bad)
	}
}

func TestFindJobByName(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	a := f.q.CreateJob(1).SetName("nightly")
	b := f.q.CreateJob(2).SetName("nightly")
	c := f.q.CreateJob(3).SetName("hourly")
	_, err := f.q.AddJob(ctx, a, b, c)
	require.NoError(t, err)

	got, err := f.q.FindJobByName(ctx, "nightly")
	require.NoError(t, err)
	assert.Equal(t, []string{a.ID, b.ID}, []string{got[0].ID, got[1].ID})
	got, err = f.q.FindJobByName(ctx, "weekly")
	require.NoError(t, err)
	assert.Empty(t, got)

	ok, err := f.q.ContainsJobByName(ctx, "hourly")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = f.q.ContainsJobByName(ctx, "weekly")
	require.NoError(t, err)
	assert.False(t, ok)

	_, err = f.q.FindJobByName(ctx, "")
	assert.ErrorIs(t, err, job.ErrInvalidName)
	_, err = f.q.ContainsJobByName(ctx, "")
	assert.ErrorIs(t, err, job.ErrInvalidName)
}
