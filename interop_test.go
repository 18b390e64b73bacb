package rjq_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Go and Node.js workers share one queue: each processes the other's jobs, reads the
// other's documents, and the Go queue raises the Node.js worker's events.
func TestNodeWorkersShareTheQueue(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	const name = "shared"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: name, MasterInterval: -1}))
	require.NoError(t, err)
	defer q.Stop(ctx)
	require.NoError(t, q.Ready(ctx))
	node := testserver.Node(t, srv, db, name)

	t.Run("a Node.js worker runs a Go job", func(t *testing.T) {
		events := q.Events(ctx, queue.EventActive, queue.EventCompleted)
		j := q.CreateJob(map[string]any{"to": "ann"}).SetPriority(job.High)
		_, err := q.AddJob(ctx, j)
		require.NoError(t, err)
		assert.Equal(t, "completed "+j.ID, node.Run(t, "process"))

		got, err := q.GetJob(ctx, j.ID)
		require.NoError(t, err)
		done := got[0]
		assert.Equal(t, job.Completed, done.Status)
		assert.Equal(t, 100.0, done.Progress)
		assert.Equal(t, 1, done.ProcessCount)
		assert.Equal(t, `node did {"to":"ann"}`, done.GetLastLog().Data)
		assert.NotEqual(t, q.ID(), done.QueueID)
		// Node's completion moves progress from 0 to 100 as well: it must still be raised
		// as completed here, not as progress.
		for _, typ := range []queue.EventType{queue.EventActive, queue.EventCompleted} {
			select {
			case e := <-events:
				assert.Equal(t, typ, e.Type)
				assert.Equal(t, j.ID, e.JobID)
				assert.False(t, e.Local)
				assert.Equal(t, done.QueueID, e.QueueID)
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s event from the Node.js worker", typ)
			}
		}
	})

	t.Run("a Go worker runs a Node.js job", func(t *testing.T) {
		id := node.Run(t, "add", "hello")
		require.True(t, job.ValidID(id), "node printed %q", id)
		got, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		nj := got[0]
		assert.Equal(t, job.Waiting, nj.Status)
		assert.Equal(t, job.High, nj.Priority)
		assert.Equal(t, "node-job", nj.Name)
		assert.Equal(t, "hello", nj.Data)
		assert.Equal(t, map[string]any{"from": "node"}, nj.Fields, "a Node.js object payload's other keys")

		events := q.Events(ctx, queue.EventCompleted)
		ran := make(chan *job.Job, 1)
		require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) {
			ran <- j
			return "go did it", nil
		}))
		select {
		case j := <-ran:
			assert.Equal(t, id, j.ID)
		case <-time.After(20 * time.Second):
			t.Fatal("the Go worker did not run the Node.js job")
		}
		e := <-events
		assert.Equal(t, id, e.JobID)
		got, err = q.GetJob(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, job.Completed, got[0].Status)
		assert.Equal(t, "node", got[0].Fields["from"], "the foreign field survived the Go worker's writes")
	})
}

// A Node.js 3.1.7 worker or master meets the jobs and tables of the features beyond the
// original: it keeps working, and what it writes keeps the Go features' data.
func TestNodeMeetsTheFeaturesBeyondTheOriginal(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	const name = "beyond"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A Go Queue Master (schedules) that processes nothing: the Node.js worker takes every job.
	q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: name, MasterInterval: time.Hour}))
	require.NoError(t, err)
	defer q.Stop(ctx)
	require.NoError(t, q.Ready(ctx))
	node := testserver.Node(t, srv, db, name)
	get := func(t *testing.T, id string) *job.Job {
		t.Helper()
		got, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		return got[0]
	}
	reset := func(t *testing.T) {
		t.Helper()
		_, err := q.Reset(ctx)
		require.NoError(t, err)
	}

	t.Run("unique key: processed as any job, the key survives", func(t *testing.T) {
		reset(t)
		added, err := q.AddJob(ctx, q.CreateJob("u").SetUniqueKey("invoice-7"))
		require.NoError(t, err)
		assert.Equal(t, "completed "+added[0].ID, node.Run(t, "process"))
		done := get(t, added[0].ID)
		assert.Equal(t, job.Completed, done.Status)
		assert.Equal(t, "invoice-7", done.UniqueKey(), "the Node.js worker's writes keep rjqUniqueKey")

		// Finished by Node.js, completed or terminated, the key is free again.
		again, err := q.AddJob(ctx, q.CreateJob("u2").SetUniqueKey("invoice-7").SetRetryMax(0))
		require.NoError(t, err)
		assert.Equal(t, "u2", get(t, again[0].ID).Data, "a new job for the key after Node.js completed the last")
		assert.Equal(t, job.Waiting, get(t, again[0].ID).Status)
		assert.Equal(t, "terminated "+again[0].ID, node.Run(t, "fail"), "retryMax 0: no retry")
		assert.Equal(t, job.Terminated, get(t, again[0].ID).Status)
		third, err := q.AddJob(ctx, q.CreateJob("u3").SetUniqueKey("invoice-7"))
		require.NoError(t, err)
		assert.Equal(t, "u3", get(t, third[0].ID).Data, "a new job for the key after Node.js terminated the last")
	})

	t.Run("Wait and Result: a Node.js worker's outcome", func(t *testing.T) {
		reset(t)
		added, err := q.AddJob(ctx, q.CreateJob("w"))
		require.NoError(t, err)
		waited := make(chan *job.Job, 1)
		go func() {
			j, err := q.Wait(ctx, added[0].ID)
			assert.NoError(t, err)
			waited <- j
		}()
		assert.Equal(t, "completed "+added[0].ID, node.Run(t, "process"))
		select {
		case j := <-waited:
			var result string
			require.NoError(t, j.Result(&result))
			assert.Equal(t, `node did "w"`, result)
		case <-ctx.Done():
			t.Fatal("Wait did not return for the job the Node.js worker completed")
		}
	})

	t.Run("backoff: a Node.js worker retries linearly and keeps the policy", func(t *testing.T) {
		reset(t)
		b := job.Backoff{Exponential: true, Min: time.Second, Max: time.Minute}
		added, err := q.AddJob(ctx, q.CreateJob("b").SetBackoff(b).SetRetryMax(2))
		require.NoError(t, err)
		assert.Equal(t, "failed "+added[0].ID, node.Run(t, "fail"))
		failed := get(t, added[0].ID)
		assert.Equal(t, job.Failed, failed.Status)
		assert.Equal(t, 1, failed.RetryCount)
		assert.Equal(t, b, failed.Backoff(), "rjqBackoff survives, for the next Go worker")
	})

	t.Run("heartbeats: a Node.js master does not take a live Go worker's job for orphaned", func(t *testing.T) {
		reset(t)
		worker, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: name, MasterInterval: -1, Heartbeat: time.Second}))
		require.NoError(t, err)
		defer worker.Stop(ctx)
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		require.NoError(t, worker.Process(func(ctx context.Context, _ *job.Job) (any, error) {
			started <- struct{}{}
			<-release
			return "go", nil
		}))
		added, err := q.AddJob(ctx, q.CreateJob("h"))
		require.NoError(t, err)
		<-started
		deadline := time.Now().Add(3 * time.Second) // three heartbeats: the first lease has been renewed
		for time.Now().Before(deadline) {
			assert.Equal(t, "reviewed 0", node.Run(t, "review"))
			require.Equal(t, job.Active, get(t, added[0].ID).Status)
		}
		events := q.Events(ctx, queue.EventCompleted)
		close(release)
		waitForEvent(t, events, queue.EventCompleted, added[0].ID)
	})

	t.Run("cron: a Node.js worker processes the scheduled jobs", func(t *testing.T) {
		reset(t)
		require.NoError(t, q.Schedule(ctx, "tick", "@every 1s", "scheduled", nil))
		var jobs []*job.Job
		require.Eventually(t, func() bool {
			jobs, err = q.FindJobByName(ctx, "tick")
			return err == nil && len(jobs) > 0
		}, 15*time.Second, 100*time.Millisecond, "the master enqueues a run")
		require.NoError(t, q.Unschedule(ctx, "tick"))
		done := strings.TrimPrefix(node.Run(t, "process"), "completed ")
		assert.Equal(t, "tick", get(t, done).Name)
		assert.Equal(t, job.Completed, get(t, done).Status)
	})

	t.Run("workflow: a Node.js worker never claims a blocked child, and runs it once released", func(t *testing.T) {
		reset(t)
		events := q.Events(ctx, queue.EventReleased)
		parent := q.CreateJob("p").SetPriority(job.Low)
		// Of higher priority and added first: a worker that claimed blocked jobs would take it.
		child := q.CreateJob("c").SetPriority(job.Highest).SetDependsOn(parent.ID)
		_, err := q.AddJob(ctx, child, parent)
		require.NoError(t, err)
		assert.Equal(t, "completed "+parent.ID, node.Run(t, "process"), "the parent, not the blocked child")
		waitForEvent(t, events, queue.EventReleased, child.ID) // by this Go Master, from its changefeed
		assert.Equal(t, "completed "+child.ID, node.Run(t, "process"))
		done := get(t, child.ID)
		var result string
		require.NoError(t, done.ParentResult(parent.ID, &result))
		assert.Equal(t, `node did "p"`, result)
		assert.Equal(t, []string{parent.ID}, done.DependsOn(), "the Node.js worker's writes keep rjqDependsOn")
	})

	t.Run("rate limit: a Node.js worker knows none, and is not broken by the table", func(t *testing.T) {
		reset(t)
		require.NoError(t, q.SetLimit(ctx, "mail", queue.Limit{Starts: 1, Per: time.Hour}))
		added, err := q.AddJob(ctx, q.CreateJob("m").SetName("mail"))
		require.NoError(t, err)
		assert.Equal(t, "completed "+added[0].ID, node.Run(t, "process"))
	})
}

// waitForEvent waits for the event typ of job id.
func waitForEvent(t *testing.T, events <-chan queue.Event, typ queue.EventType, id string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Type == typ && e.JobID == id {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event for job %s", typ, id)
		}
	}
}

// Payloads are stored by their json names, so a Node.js worker, the CLI's field search
// and a raw read all see what the Go struct's tags say; a rethinkdb tag wins where there
// is one, and documents stored by Go field name (before v0.3) still decode.
func TestPayloadsKeepTheirJSONNames(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	const name = "payloads"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := queue.New(ctx, connectTo(srv, db), queuetest.Options(queue.Options{Name: name, MasterInterval: -1}))
	require.NoError(t, err)
	defer q.Stop(ctx)
	require.NoError(t, q.Ready(ctx))
	sess := testserver.Session(t)
	raw := func(t *testing.T, id string) map[string]any {
		t.Helper()
		var doc map[string]any
		require.NoError(t, r.DB(db).Table(name).Get(id).ReadOne(&doc, sess))
		return doc
	}
	type email struct {
		To     string    `json:"to"`
		Count  int       `json:"count"`
		SentAt time.Time `json:"sentAt,omitempty"`
		Note   string    `json:"-"`
	}

	t.Run("json names through AddJob, a raw read, a Node.js worker and DataAs", func(t *testing.T) {
		added, err := q.AddJob(ctx, q.CreateJob(email{To: "ann", Count: 2, Note: "not stored"}))
		require.NoError(t, err)
		id := added[0].ID
		assert.Equal(t, map[string]any{"to": "ann", "count": 2.0}, raw(t, id)["data"], "the stored keys are the json names")
		got, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		var back email
		require.NoError(t, got[0].DataAs(&back))
		assert.Equal(t, email{To: "ann", Count: 2}, back)

		node := testserver.Node(t, srv, db, name)
		assert.Equal(t, "completed "+id, node.Run(t, "process"))
		got, err = q.GetJob(ctx, id)
		require.NoError(t, err)
		var result string
		require.NoError(t, got[0].Result(&result))
		assert.Equal(t, `node did {"count":2,"to":"ann"}`, sortedJSON(t, result), "the Node.js worker reads job.data.to")
	})

	t.Run("a zero time is stored as null and reads back as the zero time", func(t *testing.T) {
		type stamped struct {
			Email  string    `json:"email"`
			SentAt time.Time `json:"sentAt"`
		}
		added, err := q.AddJob(ctx, q.CreateJob(stamped{Email: "x"}))
		require.NoError(t, err)
		data := raw(t, added[0].ID)["data"].(map[string]any)
		assert.Contains(t, data, "sentAt")
		assert.Nil(t, data["sentAt"])
		got, err := q.GetJob(ctx, added[0].ID)
		require.NoError(t, err)
		back := stamped{SentAt: time.Now()}
		require.NoError(t, got[0].DataAs(&back))
		assert.True(t, back.SentAt.IsZero())
		assert.Equal(t, "x", back.Email)
	})

	t.Run("a rethinkdb tag wins; an old document still decodes", func(t *testing.T) {
		type both struct {
			Email string `rethinkdb:"email_address" json:"email"`
		}
		added, err := q.AddJob(ctx, q.CreateJob(both{Email: "b"}))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"email_address": "b"}, raw(t, added[0].ID)["data"])

		old := q.CreateJob(nil)
		_, err = q.AddJob(ctx, old)
		require.NoError(t, err)
		_, err = r.DB(db).Table(name).Get(old.ID).Update(map[string]any{"data": map[string]any{"To": "carl", "Count": 3}}).RunWrite(sess)
		require.NoError(t, err)
		got, err := q.GetJob(ctx, old.ID)
		require.NoError(t, err)
		var back email
		require.NoError(t, got[0].DataAs(&back))
		assert.Equal(t, email{To: "carl", Count: 3}, back, "stored by Go field name before v0.3")
	})

	t.Run("a handler's result by json names; one that cannot be stored says so", func(t *testing.T) {
		_, err := q.Reset(ctx)
		require.NoError(t, err)
		type receipt struct {
			SentTo string    `json:"sent_to"`
			At     time.Time `json:"at"`
		}
		results := map[string]any{
			"good": receipt{SentTo: "ann"},
			"bad":  map[string]any{"ratio": math.NaN()},
		}
		require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) {
			return results[j.Name], nil
		}))
		ids := map[string]string{}
		for n := range results {
			added, err := q.AddJob(ctx, q.CreateJob(nil).SetName(n))
			require.NoError(t, err)
			ids[n] = added[0].ID
		}
		good, err := q.Wait(ctx, ids["good"])
		require.NoError(t, err)
		var rc receipt
		require.NoError(t, good.Result(&rc))
		assert.Equal(t, receipt{SentTo: "ann"}, rc)
		last := raw(t, ids["good"])["log"].([]any)
		assert.Equal(t, map[string]any{"sent_to": "ann", "at": nil}, last[len(last)-1].(map[string]any)["data"])

		bad, err := q.Wait(ctx, ids["bad"])
		require.NoError(t, err)
		assert.Equal(t, job.Completed, bad.Status, "the job completes")
		var v any
		err = bad.Result(&v)
		require.ErrorIs(t, err, job.ErrResultNotStored)
		assert.Contains(t, err.Error(), "ratio")
	})
}

// sortedJSON rewrites the JSON object after "node did " with its keys sorted, as Go
// writes maps, so that the test does not depend on the order Node.js wrote them in.
func sortedJSON(t *testing.T, s string) string {
	t.Helper()
	prefix, text, ok := strings.Cut(s, " did ")
	require.True(t, ok, s)
	var v any
	require.NoError(t, json.Unmarshal([]byte(text), &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return prefix + " did " + string(b)
}
