package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Every command that prints something prints JSON under --json, one value a script can
// parse, of the shape it expects: objects for single results, arrays for lists (empty
// ones included, never null), in the one style of the tools (queuetest.CheckJSONStyle:
// camelCase, RFC 3339 UTC times, milliseconds).
func TestJSONOutput(t *testing.T) {
	q, db, addr, ctx := newQueue(t, queuetest.Options(queue.Options{MasterInterval: -1}))
	jobs, err := q.AddJob(ctx, q.CreateJob("a"), q.CreateJob("b"), q.CreateJob("c"))
	require.NoError(t, err)
	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--json"}

	// Something in every side table, and a completed job with a result.
	done, err := q.AddJob(ctx, q.CreateJob(map[string]any{"Upper": 1}).SetName("done"))
	require.NoError(t, err)
	require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
		if j.Name == "done" {
			return map[string]any{"SentAt": time.Now()}, nil
		}
		return nil, job.Cancel("not now")
	}))
	_, err = q.Wait(ctx, done[0].ID)
	require.NoError(t, err)
	require.NoError(t, q.Schedule(ctx, "nightly", "0 3 * * *", nil, nil))
	require.NoError(t, q.SetLimit(ctx, "mail", queue.Limit{Starts: 10, Per: time.Minute, Window: &queue.Window{From: "09:00", To: "17:00"}}))
	require.Eventually(t, func() bool {
		res := rjq(t, bin, append(base, "workers")...)
		return res.code == 0 && len(res.stdout) > 3
	}, 30*time.Second, 200*time.Millisecond, "the processing queue registers")
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
		{[]string{"show", done[0].ID}, array, ""},
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
		{[]string{"sequences"}, array, ""},
		{[]string{"triggers"}, array, ""},
	} {
		res := rjq(t, bin, append(base, tc.args...)...)
		require.Equal(t, 0, res.code, "%v: %s", tc.args, res.stderr)
		require.True(t, json.Valid([]byte(res.stdout)), "%v printed %q", tc.args, res.stdout)
		require.NotEmpty(t, res.stdout, "%v", tc.args)
		assert.Equal(t, tc.shape, res.stdout[0], "%v printed %s", tc.args, res.stdout)
		queuetest.CheckJSONStyle(t, strings.Join(tc.args, " "), []byte(res.stdout))
		if tc.key != "" {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &m))
			assert.Contains(t, m, tc.key, "%v", tc.args)
		}
	}
}
