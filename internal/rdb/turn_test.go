package rdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A key's tail is its unfinished job of the greatest place; a key whose jobs all finished,
// or that has none, has none. The jobs ahead are read by id with their key, place and
// status, and an id the table does not hold is left out.
func TestSequenceTailsAndTheJobsAhead(t *testing.T) {
	ctx := context.Background()
	tbl, s, db := sequenceTable(t)
	buildSequenceIndex(t, tbl)

	insert := sequenceInserter(t, s, db)
	a1 := insert("a", 10, job.Active)
	a2 := insert("a", 20, job.Waiting)
	insert("a", 30, job.Completed) // finished: no longer in the sequence
	insert("b", 5, job.Completed)
	c1 := insert("c", 7, job.Failed)

	tails, err := tbl.SequenceTails(ctx, []string{"a", "b", "c", "none"})
	require.NoError(t, err)
	ids := make(map[string]string, len(tails))
	for k, tail := range tails {
		ids[k] = tail.ID
	}
	assert.Equal(t, map[string]string{"a": a2, "b": "", "c": c1, "none": ""}, ids)
	assert.False(t, tails["a"].Waiting.IsZero(), "a waiting tail says when it falls due")
	assert.True(t, tails["c"].Waiting.IsZero(), "a tail to be retried holds no place")

	got, err := tbl.ReadSequenceJobs(ctx, []string{a1, c1, "no-such-job"})
	require.NoError(t, err)
	assert.Equal(t, map[string]rdb.SequenceJob{
		a1: {Status: job.Active, Key: "a", At: 10, AtOK: true},
		c1: {Status: job.Failed, Key: "c", At: 7, AtOK: true},
	}, got)
}

// TurnOf: the job ahead tells a job's turn only when it is of the same key and placed
// before it; otherwise the index must.
func TestTurnOf(t *testing.T) {
	withPrev := func(prev any, at any) *job.Job {
		j := job.New(nil, job.DefaultOptions()).SetSequence("k")
		if prev != nil {
			j.Fields[docfmt.SequencePrev] = prev
		}
		j.Fields[docfmt.SequenceAt] = at
		return j
	}
	ahead := func(s job.Status) rdb.SequenceJob { return rdb.SequenceJob{Status: s, Key: "k", At: 5, AtOK: true} }
	for _, c := range []struct {
		name  string
		j     *job.Job
		prev  rdb.SequenceJob
		found bool
		want  rdb.Turn
	}{
		{"no stamp: an earlier version's job", withPrev(nil, 10.0), rdb.SequenceJob{}, false, rdb.TurnUnknown},
		{"a stamp of another type", withPrev(42, 10.0), rdb.SequenceJob{}, false, rdb.TurnUnknown},
		{"nothing ahead when added", withPrev("", 10.0), rdb.SequenceJob{}, false, rdb.TurnFirst},
		{"the one ahead completed", withPrev("p", 10.0), ahead(job.Completed), true, rdb.TurnFirst},
		{"the one ahead terminated", withPrev("p", int64(10)), ahead(job.Terminated), true, rdb.TurnFirst},
		{"the one ahead waits: the first may be due, to claim in its place", withPrev("p", 10.0), ahead(job.Waiting), true, rdb.TurnUnknown},
		{"the one ahead runs", withPrev("p", 10.0), ahead(job.Active), true, rdb.TurnWaits},
		{"the one ahead will be retried: it may be due", withPrev("p", 10.0), ahead(job.Failed), true, rdb.TurnUnknown},
		{"the one ahead was cancelled: those before it may not be done", withPrev("p", 10.0), ahead(job.Cancelled), true, rdb.TurnUnknown},
		{"the one ahead was removed", withPrev("p", 10.0), rdb.SequenceJob{}, false, rdb.TurnUnknown},
		{"the one ahead is of another key", withPrev("p", 10.0), rdb.SequenceJob{Status: job.Active, Key: "other", At: 5, AtOK: true}, true, rdb.TurnUnknown},
		{"the one ahead was added again behind it", withPrev("p", 10.0), rdb.SequenceJob{Status: job.Active, Key: "k", At: 50, AtOK: true}, true, rdb.TurnUnknown},
		{"the one ahead has no place", withPrev("p", 10.0), rdb.SequenceJob{Status: job.Active, Key: "k"}, true, rdb.TurnUnknown},
		{"no place of its own", withPrev("p", "ten"), ahead(job.Active), true, rdb.TurnUnknown},
		{"the one ahead has a status of its own", withPrev("p", 10.0), ahead("paused"), true, rdb.TurnUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, rdb.TurnOf(c.j, c.prev, c.found))
		})
	}
}
