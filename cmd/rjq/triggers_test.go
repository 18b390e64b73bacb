package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/listing"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// triggers shows each trigger: its table and index, cursor, lag, runner and the jobs it
// made, as text and as JSON.
func TestTriggersShowsEachTrigger(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: time.Hour}))
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}
	res := rjq(t, bin, append(base, "triggers")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "no triggers\n", res.stdout)

	s := testserver.Session(t)
	orders := r.DB(db).Table("orders")
	require.NoError(t, r.DB(db).TableCreate("orders").Exec(s))
	require.NoError(t, orders.IndexCreate("updatedAt").Exec(s))
	require.NoError(t, orders.IndexWait().Exec(s))
	require.NoError(t, q.AddTrigger(ctx, queue.Trigger{Name: "orders", Table: "orders", Index: "updatedAt",
		Job: func(context.Context, map[string]any) (*job.Job, error) { return q.CreateJob(nil).SetName("order"), nil }}))
	require.NoError(t, orders.Insert(map[string]any{"id": "o1", "updatedAt": r.Now()}).Exec(s))
	require.Eventually(t, func() bool {
		ts, err := q.Triggers(ctx)
		return err == nil && len(ts) == 1 && ts[0].Jobs == 1
	}, 20*time.Second, 50*time.Millisecond, "the trigger made its job")

	res = rjq(t, bin, append(base, "triggers")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `NAME\s+TABLE\s+INDEX\s+CURSOR\s+LAG\s+RUNNER\s+JOBS\s+SKIPPED`, res.stdout)
	assert.Regexp(t, `orders\s+`+db+`\.orders\s+updatedAt\s+\S+.*pid \d+ since .*\s1\s+0\n`, res.stdout)

	res = rjq(t, bin, append(base, "triggers", "--json")...)
	require.Equal(t, 0, res.code, res.stderr)
	var rows []listing.TriggerRow
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, "orders", rows[0].Table)
	assert.Equal(t, q.ID(), rows[0].Runner)
	assert.Equal(t, "o1", rows[0].CursorID)
	assert.Equal(t, int64(1), rows[0].Jobs)
}
