package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// A job as the Node.js library 3.x stores it after `q.createJob().setName('report')`,
// `job.data = {user: 'ann'}` and `q.addJob(job)` with the default options (see "Job
// Schema" and "Job Options" in the original's docs, and job.js / queue-add-job.js): every
// field and its type, with the values that vary filled in from the stored document.
func nodeDocument(id, queueID string, created, enable, logDate time.Time) map[string]any {
	return map[string]any{
		"id":           id,
		"name":         "report",
		"priority":     float64(40),
		"timeout":      float64(300000),
		"retryDelay":   float64(600000),
		"retryMax":     float64(3),
		"retryCount":   float64(0),
		"repeat":       false,
		"repeatDelay":  float64(300000),
		"processCount": float64(0),
		"progress":     float64(0),
		"status":       "waiting",
		"log": []any{map[string]any{
			"date":         logDate,
			"queueId":      queueID,
			"message":      "Job added to the queue",
			"data":         nil,
			"type":         "information",
			"status":       "waiting",
			"retryCount":   float64(0),
			"processCount": float64(0),
		}},
		"dateCreated":  created,
		"dateEnable":   enable,
		"dateStarted":  nil,
		"dateFinished": nil,
		"queueId":      queueID,
		"data":         map[string]any{"user": "ann"},
	}
}

func TestAddJobWritesTheNodeDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	j := f.q.CreateJob(map[string]any{"user": "ann"}).SetName("report")
	_, err := f.q.AddJob(testContext(t), j)
	require.NoError(t, err)

	doc := f.rawDoc(t, j.ID)
	require.NotNil(t, doc)
	created, ok := doc["dateCreated"].(time.Time)
	require.True(t, ok, "dateCreated is a RethinkDB time, got %T", doc["dateCreated"])
	logDate := doc["log"].([]any)[0].(map[string]any)["date"].(time.Time)
	enable, ok := doc["dateEnable"].(time.Time)
	require.True(t, ok, "dateEnable is a RethinkDB time, got %T", doc["dateEnable"])
	want := nodeDocument(j.ID, f.q.ID(), created, enable, logDate)
	assert.Equal(t, normalizeTimes(want), normalizeTimes(doc))
	within(t, time.Now(), created, 5*time.Second)
	within(t, time.Now(), logDate, 5*time.Second)
	within(t, time.Now(), enable, 5*time.Second)
	assert.True(t, j.DateCreated.Equal(created), "the job in memory has the stored dateCreated")
}

// normalizeTimes puts every time in UTC: the driver returns them in a "+00:00" zone.
func normalizeTimes(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeTimes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeTimes(e)
		}
		return out
	}
	return v
}

func TestAddJobBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	events := collect(t, f.q, queue.EventAdded)
	a := f.q.CreateJob("a").SetPriority(job.High).SetRetryMax(0).SetTimeout(time.Second).
		SetRepeat(job.RepeatForever).SetRepeatDelay(2 * time.Second).SetRetryDelay(3 * time.Second)
	later := time.Now().Add(time.Hour)
	b := f.q.CreateJob(nil).SetDateEnable(later).SetRepeat(2)
	added, err := f.q.AddJob(testContext(t), a, b)
	require.NoError(t, err)
	require.Equal(t, []*job.Job{a, b}, added, "AddJob returns the jobs it was given")
	for _, j := range added {
		assert.Equal(t, job.Waiting, j.Status)
		require.Len(t, j.Log, 1)
		assert.Equal(t, job.MessageAdded, j.Log[0].Message)
		assert.Equal(t, f.q.ID(), j.QueueID)
	}

	docA := f.rawDoc(t, a.ID)
	assert.Equal(t, float64(20), docA["priority"])
	assert.Equal(t, float64(0), docA["retryMax"])
	assert.Equal(t, float64(1000), docA["timeout"])
	assert.Equal(t, float64(3000), docA["retryDelay"])
	assert.Equal(t, float64(2000), docA["repeatDelay"])
	assert.Equal(t, true, docA["repeat"])
	assert.Equal(t, "a", docA["data"])

	docB := f.rawDoc(t, b.ID)
	assert.Equal(t, float64(2), docB["repeat"])
	assert.NotContains(t, docB, "data", "a job without data has no data field, as in Node.js")
	assert.True(t, later.Truncate(time.Millisecond).Equal(docB["dateEnable"].(time.Time)))

	got := events(2)
	assert.ElementsMatch(t, []string{a.ID, b.ID}, []string{got[0].JobID, got[1].JobID})
	for _, e := range got {
		assert.True(t, e.Local)
		assert.Equal(t, f.q.ID(), e.QueueID)
	}
}

func TestAddJobBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	existing := f.add(t, 1)[0]

	cases := []struct {
		name string
		jobs func() []*job.Job
		want error
	}{
		{"no jobs", func() []*job.Job { return nil }, queue.ErrNoJobs},
		{"nil job", func() []*job.Job { return []*job.Job{f.q.CreateJob(1), nil} }, queue.ErrNilJob},
		{"priority", func() []*job.Job { return []*job.Job{f.q.CreateJob(1), f.q.CreateJob(2).SetPriority(7)} }, job.ErrInvalidPriority},
		{"timeout", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetTimeout(-time.Second)} }, job.ErrInvalidTimeout},
		{"retryMax", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetRetryMax(-1)} }, job.ErrInvalidRetryMax},
		{"retryDelay", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetRetryDelay(-1)} }, job.ErrInvalidRetryDelay},
		{"repeat", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetRepeat(-2)} }, job.ErrInvalidRepeat},
		{"repeatDelay", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetRepeatDelay(-1)} }, job.ErrInvalidRepeatDelay},
		{"dateEnable", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetDateEnable(time.Time{})} }, job.ErrInvalidDateEnable},
		{"name", func() []*job.Job { return []*job.Job{f.q.CreateJob(1).SetName("")} }, job.ErrInvalidName},
		{"id", func() []*job.Job {
			j := f.q.CreateJob(1)
			j.ID = "not-a-uuid"
			return []*job.Job{j}
		}, job.ErrInvalidID},
		{"reserved field", func() []*job.Job {
			j := f.q.CreateJob(1)
			j.Fields = map[string]any{"status": "active"}
			return []*job.Job{j}
		}, job.ErrInvalidField},
		{"progress", func() []*job.Job {
			j := f.q.CreateJob(1)
			j.Progress = 101
			return []*job.Job{j}
		}, job.ErrInvalidField},
		{"same job twice", func() []*job.Job {
			j := f.q.CreateJob(1)
			return []*job.Job{j, j}
		}, job.ErrInvalidID},
		{"id already in the queue", func() []*job.Job {
			dup := f.q.CreateJob(1)
			dup.ID = existing.ID
			return []*job.Job{f.q.CreateJob(2), dup}
		}, job.ErrExists},
	}
	for _, tc := range cases {
		jobs := tc.jobs()
		added, err := f.q.AddJob(ctx, jobs...)
		require.Error(t, err, tc.name)
		assert.ErrorIs(t, err, tc.want, tc.name)
		if !errors.Is(tc.want, job.ErrExists) {
			assert.ErrorIs(t, err, job.ErrInvalid, "%s: bad input wraps job.ErrInvalid", tc.name)
		}
		assert.Nil(t, added, tc.name)
		for _, j := range jobs {
			if j != nil && j.ID != existing.ID {
				assert.Equal(t, job.Created, j.Status, "%s: a refused job is left as it was", tc.name)
			}
		}
		assert.Equal(t, 1, f.count(t), "%s: nothing was written", tc.name)
	}
}
