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

// A claim with a look at the head claims as Claim does, and the look sees the head as the
// claim left it: the jobs it won are out of the index, and the skip leaves out what it
// names.
func TestClaimAndLookSeesTheHeadTheClaimLeft(t *testing.T) {
	tbl, insert := candidateTable(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Second)
	high := insert(job.High, '0', past)
	normal := insert(job.Normal, '1', past)
	low := insert(job.Low, '2', past)

	claim := func(id string) rdb.Claim {
		at := time.Now().UTC().Truncate(time.Millisecond)
		return tbl.NewClaim(&job.Job{ID: id, Status: job.Waiting}, at, at.Add(time.Minute))
	}
	res, head, err := tbl.ClaimAndLook(ctx, nil, []rdb.Claim{claim(high)}, rdb.Skip{})
	require.NoError(t, err)
	require.Len(t, res.Claimed, 1)
	assert.Equal(t, high, res.Claimed[0].ID)
	assert.Equal(t, job.Active, res.Claimed[0].Status)
	assert.Empty(t, res.Missed)
	assert.Equal(t, rdb.Head{Priority: float64(job.Normal), OK: true}, head, "the High job claimed is out of the head")

	// A claim that misses (the job is active since) still looks; the skip leaves the
	// Normal job out.
	res, head, err = tbl.ClaimAndLook(ctx, nil, []rdb.Claim{claim(high)}, rdb.Skip{IDs: []any{normal}})
	require.NoError(t, err)
	assert.Empty(t, res.Claimed)
	assert.Equal(t, []string{high}, res.Missed)
	assert.Equal(t, rdb.Head{Priority: float64(job.Low), OK: true}, head)

	res, head, err = tbl.ClaimAndLook(ctx, nil, []rdb.Claim{claim(normal), claim(low)}, rdb.Skip{})
	require.NoError(t, err)
	assert.Len(t, res.Claimed, 2)
	assert.False(t, head.OK, "an empty head gives no answer")
}

// A claim wins its jobs beside a document written by hand that its compare-and-set cannot
// read (no retryCount: the update fails for that document alone), which it misses without
// failing; the jobs it won come back as the claim left them.
func TestAClaimWinsBesideADocumentItCannotCompare(t *testing.T) {
	tbl, insert := candidateTable(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Second)
	a, b, bad := insert(job.Normal, '0', past), insert(job.Normal, '1', past), insert(job.Normal, '2', past)
	_, err := r.DB(tbl.DB).Table(tbl.Name).Get(bad).Replace(func(doc r.Term) r.Term { return doc.Without("retryCount") }).RunWrite(tbl.Session)
	require.NoError(t, err)

	at := time.Now().UTC().Truncate(time.Millisecond)
	var claims []rdb.Claim
	for _, id := range []string{a, bad, b} {
		claims = append(claims, tbl.NewClaim(&job.Job{ID: id, Status: job.Waiting}, at, at.Add(time.Minute)))
	}
	res, err := tbl.Claim(ctx, nil, claims)
	require.NoError(t, err)
	assert.Equal(t, []string{bad}, res.Missed)
	require.Len(t, res.Claimed, 2)
	for _, j := range res.Claimed {
		assert.Contains(t, []string{a, b}, j.ID)
		assert.Equal(t, job.Active, j.Status)
		assert.Equal(t, 1, j.ProcessCount)
		assert.Equal(t, tbl.QueueID, j.QueueID)
		assert.True(t, j.DateStarted.Equal(at))
		require.NotEmpty(t, j.Log)
		assert.Equal(t, job.MessageActive, j.Log[len(j.Log)-1].Message)
	}
}
