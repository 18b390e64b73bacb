package bulk

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// A job that a worker fails again as soon as it is reanimated comes back to the status:
// the walk takes it once, and ends.
func TestReanimateEndsWhenTheJobsFailAgain(t *testing.T) {
	s := testserver.Session(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "walk"}))
	table := r.DB(db).Table("walk")
	past := time.Now().Add(-time.Hour)
	var docs []any
	for _, id := range []string{"a", "b", "c"} {
		docs = append(docs, map[string]any{"id": id, "status": "failed", "dateFinished": past, "name": "n",
			"priority": 40, "dateEnable": past, "dateCreated": past})
	}
	_, err := table.Insert(docs).RunWrite(s)
	require.NoError(t, err)

	calls := 0
	failAgain := func(ctx context.Context, ids []string) ([]string, error) {
		calls++
		require.Less(t, calls, 10, "the walk does not end")
		anyIDs := make([]any, len(ids))
		for i, id := range ids {
			anyIDs[i] = id
		}
		_, err := table.GetAll(anyIDs...).Update(map[string]any{"status": "failed", "dateFinished": r.Now()}).RunWrite(s)
		return ids, err
	}
	n, err := Reanimate(ctx, s, table, Filter{Status: "failed", Batch: 2}, failAgain, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "each job once")
	assert.Equal(t, 2, calls, "two slices of two and one")
}
