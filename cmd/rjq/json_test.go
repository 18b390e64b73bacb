package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Every command that prints something prints JSON under --json, one value a script can
// parse, of the shape it expects: objects for single results, arrays for lists (empty
// ones included, never null).
func TestJSONOutput(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	jobs, err := q.AddJob(ctx, q.CreateJob("a"), q.CreateJob("b"), q.CreateJob("c"))
	require.NoError(t, err)
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--json"}
	const object, array = '{', '['
	for _, tc := range []struct {
		args  []string
		shape byte
		key   string // a key the object must have
	}{
		{[]string{"summary"}, object, "waiting"},
		{[]string{"list"}, array, ""},
		{[]string{"list", "--name", "no such name"}, array, ""},
		{[]string{"show", jobs[0].ID}, array, ""},
		{[]string{"add", "--data", `{"n":1}`}, object, "id"},
		{[]string{"cancel", jobs[0].ID}, object, "cancel"},
		{[]string{"reanimate", jobs[0].ID}, object, "reanimate"},
		{[]string{"remove", jobs[1].ID}, object, "remove"},
		{[]string{"reanimate", "--status", "failed"}, object, "reanimated"},
		{[]string{"remove", "--status", "cancelled", "--older-than", "0s"}, object, "removed"},
		{[]string{"pause"}, object, "paused"},
		{[]string{"resume"}, object, "paused"},
		{[]string{"review"}, object, "reviewed"},
		{[]string{"queues"}, array, ""},
		{[]string{"workers"}, array, ""},
		{[]string{"schedules"}, array, ""},
		{[]string{"limits"}, array, ""},
	} {
		res := rjq(t, bin, append(base, tc.args...)...)
		require.Equal(t, 0, res.code, "%v: %s", tc.args, res.stderr)
		require.True(t, json.Valid([]byte(res.stdout)), "%v printed %q", tc.args, res.stdout)
		require.NotEmpty(t, res.stdout, "%v", tc.args)
		assert.Equal(t, tc.shape, res.stdout[0], "%v printed %s", tc.args, res.stdout)
		if tc.key != "" {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &m))
			assert.Contains(t, m, tc.key, "%v", tc.args)
		}
	}
}
