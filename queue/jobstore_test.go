package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestJobUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	j := f.q.CreateJob("foo")
	j.Fields = map[string]any{"secret": "s3cr3t", "keep": 1}
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)
	events := collect(t, f.q, queue.EventUpdated)

	got := f.get(t, j.ID)
	got.Data = "bar"
	got.Priority = job.Highest
	delete(got.Fields, "secret")
	require.NoError(t, got.Update(ctx))

	doc := f.rawDoc(t, j.ID)
	assert.Equal(t, "bar", doc["data"])
	assert.Equal(t, float64(10), doc["priority"])
	assert.NotContains(t, doc, "secret", "a field deleted from Fields is deleted from the document")
	assert.Equal(t, float64(1), doc["keep"])
	log := doc["log"].([]any)
	require.Len(t, log, 2)
	entry := log[1].(map[string]any)
	assert.Equal(t, job.MessageUpdated, entry["message"])
	old := entry["data"].(map[string]any)
	assert.Equal(t, "foo", old["data"], "the log entry holds the replaced values")
	assert.Equal(t, "s3cr3t", old["secret"])
	assert.Equal(t, float64(40), old["priority"])
	assert.NotContains(t, old, "log")
	assert.Len(t, got.Log, 2, "the job in memory has the new entry")
	assert.Equal(t, "bar", got.Data)
	assert.Equal(t, j.ID, events(1)[0].JobID)
}

func TestJobUpdateBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	before := f.rawDoc(t, j.ID)

	invalid := f.get(t, j.ID)
	invalid.SetPriority(3)
	assert.ErrorIs(t, invalid.Update(ctx), job.ErrInvalidPriority)
	invalid = f.get(t, j.ID)
	invalid.Progress = -1
	assert.ErrorIs(t, invalid.Update(ctx), job.ErrInvalid)
	assert.ErrorIs(t, f.q.CreateJob(1).Update(ctx), job.ErrNotAdded)
	assert.ErrorIs(t, job.New(1, job.DefaultOptions()).Update(ctx), job.ErrDetached)
	assert.Equal(t, before, f.rawDoc(t, j.ID))

	gone := f.get(t, j.ID)
	_, err := f.q.RemoveJob(ctx, j.ID)
	require.NoError(t, err)
	assert.ErrorIs(t, gone.Update(ctx), job.ErrNotFound)
	assert.ErrorIs(t, gone.AddLog(ctx, nil, "", "", ""), job.ErrNotFound)
	assert.Equal(t, 0, f.count(t), "a removed job is not written back")
}

func TestJobAddLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	events := collect(t, f.q, queue.EventLog)

	require.NoError(t, j.AddLog(ctx, nil, "", "", ""))
	require.NoError(t, j.AddLog(ctx, map[string]any{"step": 2}, "step two", job.Warning, job.Failed))
	log := f.rawDoc(t, j.ID)["log"].([]any)
	require.Len(t, log, 3)
	def := log[1].(map[string]any)
	assert.Equal(t, map[string]any{}, def["data"], "nil data is stored as an empty object: %#v", log)
	assert.Equal(t, job.MessageSeeLogData, def["message"])
	assert.Equal(t, "information", def["type"])
	assert.Equal(t, "waiting", def["status"], "status defaults to the job's")
	assert.Equal(t, f.q.ID(), def["queueId"])
	custom := log[2].(map[string]any)
	assert.Equal(t, map[string]any{"step": float64(2)}, custom["data"])
	assert.Equal(t, "warning", custom["type"])
	assert.Equal(t, "failed", custom["status"])
	require.Len(t, j.Log, 3)
	assert.Equal(t, "step two", j.GetLastLog().Message)
	assert.Len(t, events(2), 2)

	assert.ErrorIs(t, f.q.CreateJob(1).AddLog(ctx, nil, "", "", ""), job.ErrNotAdded)
}

func TestJobLogsAreTruncated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{LimitJobLogs: 3})
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	for i := range 4 {
		require.NoError(t, j.AddLog(ctx, i, "entry", "", ""))
	}
	log := f.rawDoc(t, j.ID)["log"].([]any)
	require.Len(t, log, 3, "the log keeps LimitJobLogs entries")
	messages := make([]string, len(log))
	for i, e := range log {
		messages[i] = e.(map[string]any)["message"].(string)
	}
	// As in the original: at the limit, the entry and a truncation notice are appended and
	// the oldest entries dropped: [added e0 e1] → [e1 e2 T] → [T e3 T].
	assert.Equal(t, []string{job.MessageLogsTruncated, "entry", job.MessageLogsTruncated}, messages)
	assert.Equal(t, "Retaining 3 log entries", log[2].(map[string]any)["data"])
	assert.Equal(t, float64(3), log[1].(map[string]any)["data"], "the newest entry is kept")
	require.Len(t, j.Log, 3, "the job in memory is truncated the same way")
	for i, e := range j.Log {
		assert.Equal(t, messages[i], e.Message)
	}
}

func TestJobUpdateProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Heartbeat: -1}) // the original's timeout-based lease
	ctx := testContext(t)
	j := f.q.CreateJob(1).SetTimeout(time.Minute).SetRetryDelay(time.Hour)
	_, err := f.q.AddJob(ctx, j)
	require.NoError(t, err)
	assert.ErrorIs(t, j.UpdateProgress(ctx, 10), job.ErrNotActive, "a waiting job has no progress")

	f.setRaw(t, j.ID, map[string]any{"status": "active", "retryCount": 2, "progress": 5})
	active := f.get(t, j.ID)
	events := collect(t, f.q, queue.EventProgress)
	for _, tc := range []struct{ in, want float64 }{{42.5, 42.5}, {150, 100}, {-3, 0}} {
		require.NoError(t, active.UpdateProgress(ctx, tc.in))
		doc := f.rawDoc(t, j.ID)
		assert.Equal(t, tc.want, doc["progress"])
		assert.Equal(t, tc.want, active.Progress)
		// dateEnable = now + timeout + retryDelay × retryCount, so a busy job is not taken
		// for a crashed one.
		within(t, time.Now().Add(time.Minute+2*time.Hour), doc["dateEnable"].(time.Time), 5*time.Second)
		assert.True(t, active.DateEnable.Equal(doc["dateEnable"].(time.Time)))
		assert.Equal(t, tc.want, events(1)[0].Progress)
	}
	log := active.Log
	require.Len(t, log, 4)
	assert.Equal(t, job.MessageProgress, log[1].Message)
	assert.Equal(t, float64(5), log[1].Data, "the entry holds the old progress")
	assert.Equal(t, 42.5, log[2].Data)

	f.setRaw(t, j.ID, map[string]any{"status": "cancelled"})
	before := f.rawDoc(t, j.ID)
	assert.ErrorIs(t, active.UpdateProgress(ctx, 60), job.ErrNotActive, "a job cancelled elsewhere is not revived")
	assert.Equal(t, before, f.rawDoc(t, j.ID))
}

// A job written by the Node.js library can carry top-level fields of its own (jobs created
// from an object) and log entries with fields this library does not model; they must
// survive every write.
func TestForeignFieldsSurvive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	j := f.add(t, 1)[0]
	masterEntry := map[string]any{
		"date": time.Now().UTC().Truncate(time.Millisecond), "queueId": "node", "message": "Master: Job processing failed",
		"type": "warning", "status": "failed", "retryCount": 1, "processCount": 1,
		"dateEnable": time.Now().UTC().Truncate(time.Millisecond),
	}
	_, err := f.table().Get(j.ID).Update(map[string]any{
		"customer": map[string]any{"name": "ann"},
		"log":      append(f.rawDoc(t, j.ID)["log"].([]any), masterEntry),
	}).RunWrite(f.raw)
	require.NoError(t, err)

	check := func(step string) {
		t.Helper()
		doc := f.rawDoc(t, j.ID)
		assert.Equal(t, map[string]any{"name": "ann"}, doc["customer"], step)
		entry := doc["log"].([]any)[1].(map[string]any)
		assert.Contains(t, entry, "dateEnable", "%s: unknown log fields survive", step)
		assert.NotContains(t, entry, "data", "%s: absent log fields stay absent", step)
	}
	got := f.get(t, j.ID)
	assert.Equal(t, map[string]any{"name": "ann"}, got.Fields["customer"])
	require.NoError(t, got.AddLog(ctx, nil, "", "", ""))
	check("AddLog")
	require.NoError(t, got.Update(ctx))
	check("Update")
	_, err = f.q.CancelJob(ctx, "x", j.ID)
	require.NoError(t, err)
	check("CancelJob")
	_, err = f.q.ReanimateJob(ctx, time.Time{}, j.ID)
	require.NoError(t, err)
	check("ReanimateJob")
}
