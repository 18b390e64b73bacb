package main

import (
	"maps"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Documents written by hand with a field of a wrong type never break summary, list or
// show: the lists print, and show of such a job says what is wrong without a crash.
func TestGarbageDocumentsNeverBreakTheCommands(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	added, err := q.AddJob(ctx, q.CreateJob("good"))
	require.NoError(t, err)
	session := testserver.Session(t)
	table := r.DB(db).Table(q.Name())
	var valid map[string]any
	cur, err := table.Get(added[0].ID).Run(session)
	require.NoError(t, err)
	require.NoError(t, cur.One(&valid))
	var docs []any
	var ids []string
	for _, status := range []string{"waiting", "failed", "completed"} {
		for _, field := range []string{"priority", "timeout", "retryCount", "log", "dateCreated", "dateEnable", "dateFinished", "progress", "name", "data"} {
			for _, v := range []any{"garbage", map[string]any{"a": 1}, []any{1}, true, nil, 1e300} {
				doc := maps.Clone(valid)
				doc["id"], doc["status"], doc[field] = uuid.NewString(), status, v
				docs = append(docs, doc)
				ids = append(ids, doc["id"].(string))
			}
		}
	}
	_, err = table.Insert(docs).RunWrite(session)
	require.NoError(t, err)

	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}
	for _, args := range [][]string{{"summary"}, {"list"}, {"--json", "list"}, {"list", "--status", "waiting"},
		{"list", "--status", "failed"}, {"list", "--status", "completed"}} {
		res := rjq(t, bin, append(base, args...)...)
		assert.Equal(t, 0, res.code, "%v: %s", args, res.stderr)
	}
	for i := 0; i < len(ids); i += 3 { // a third of them: a process per show
		id := ids[i]
		res := rjq(t, bin, append(base, "show", id)...)
		assert.Contains(t, []int{0, 1}, res.code, "show %s: %s", id, res.stderr)
		assert.NotContains(t, res.stderr, "panic", "show %s", id)
	}
}
