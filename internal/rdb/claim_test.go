package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
