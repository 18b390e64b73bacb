package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The stored log entries have the fields the original writes, no more: its claim and
// cancel entries have no "data" field, and its completion message is the status name.
func TestStoredLogEntriesMatchTheOriginal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := f.q.Events(testContext(t))
	jobs := f.add(t, 2)
	_, err := f.q.CancelJob(testContext(t), "not wanted", jobs[1].ID)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(func(context.Context, *job.Job) (any, error) { return "done", nil }))
	waitFor(t, events, queue.EventCompleted, jobs[0].ID)

	log := f.rawDoc(t, jobs[0].ID)["log"].([]any)
	require.Len(t, log, 3)
	claim, completion := log[1].(map[string]any), log[2].(map[string]any)
	assert.Equal(t, job.MessageActive, claim["message"])
	assert.NotContains(t, claim, "data", "the claim entry has no data field")
	assert.Equal(t, float64(0), claim["processCount"], "the claim entry holds the count before the claim")
	assert.Equal(t, "completed", completion["message"])
	assert.Equal(t, "done", completion["data"])
	assert.Contains(t, completion, "duration")

	cancelled := f.rawDoc(t, jobs[1].ID)["log"].([]any)
	entry := cancelled[len(cancelled)-1].(map[string]any)
	assert.Equal(t, "not wanted", entry["message"])
	assert.NotContains(t, entry, "data", "the cancel entry has no data field")
}
