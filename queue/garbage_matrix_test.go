package queue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// The wrong-type matrix: every field of a job document (the Node format's and this
// library's own) given every wrong type, on a waiting, an active and a failed job, with
// good jobs beside them and two worker queues processing. Whatever a document holds:
//   - the good jobs all complete;
//   - no document runs twice;
//   - a document is either processed like any job or reported once per queue (an error
//     event and a log line with its id) and never run;
//   - Review, Summary and GetJob of the good jobs keep working.

// matrixFields are the top-level fields of a job document.
var matrixFields = []string{
	"id", "name", "priority", "timeout", "retryDelay", "repeatDelay", "retryMax",
	"retryCount", "processCount", "progress", "repeat", "status", "log", "dateCreated",
	"dateEnable", "dateStarted", "dateFinished", "queueId", "data", "rjqUniqueKey",
	"rjqBackoff", "log.0.date", "log.0.type", "log.0.status", "log.0.retryCount",
}

// wrongValues are the values every field is given in turn; missing deletes it.
var wrongValues = map[string]any{
	"missing":  nil,
	"null":     nil,
	"string":   "garbage",
	"number":   7,
	"bool":     true,
	"array":    []any{1, "a"},
	"object":   map[string]any{"a": 1},
	"time":     time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC),
	"huge":     1e300,
	"negative": -5,
}

// A primary key holds no null and no object; the server refuses those documents itself.
func insertable(field, kind string) bool {
	return field != "id" || (kind != "null" && kind != "object" && kind != "missing")
}

// lockedBuffer is a log destination that several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// linesFor counts the log lines whose attribute "job" is id.
func (l *lockedBuffer) linesFor(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "job="+id+" ") + strings.Count(l.b.String(), fmt.Sprintf("job=%q ", id))
}

func TestEveryFieldOfEveryWrongTypeNeitherBlocksNorRunsTwice(t *testing.T) {
	t.Parallel()
	for _, base := range []job.Status{job.Waiting, job.Active, job.Failed} {
		t.Run(string(base), func(t *testing.T) {
			t.Parallel()
			wrongTypeMatrix(t, base)
		})
	}
}

// garbageDoc is one document of the matrix.
type garbageDoc struct {
	id          any
	name        string // the id as events and logs print it
	field, kind string
}

func wrongTypeMatrix(t *testing.T, base job.Status) {
	logs := [2]*lockedBuffer{{}, {}}
	opts := func(i int) *queue.Options {
		return &queue.Options{Concurrency: 4, MasterInterval: -1, Heartbeat: -1,
			Logger: slog.New(slog.NewTextHandler(logs[i], nil)), EventBuffer: 1 << 12}
	}
	f := newFixture(t, opts(0))
	second := newQueue(t, f, opts(1))
	// Longer than testContext: the error events must flow for the whole test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)

	// The valid document every garbage one is a copy of.
	model := f.add(t, 1)[0]
	valid := f.rawDoc(t, model.ID)
	require.NotNil(t, valid)
	_, err := f.q.RemoveJob(ctx, model.ID)
	require.NoError(t, err)
	past := time.Now().Add(-time.Hour).UTC()
	valid["status"] = string(base)
	valid["dateEnable"] = past
	valid["rjqUniqueKey"] = "k"
	valid["rjqBackoff"] = map[string]any{"exponential": true, "min": 1000, "max": 60000}
	switch base {
	case job.Active:
		valid["dateStarted"], valid["processCount"] = past, 1
		valid["queueId"] = "gone:db:q:1:" + uuid.NewString()
	case job.Failed:
		valid["dateStarted"], valid["dateFinished"], valid["processCount"], valid["retryCount"] = past, past, 1, 1
	}

	var docs []garbageDoc
	var batch []any
	for _, field := range matrixFields {
		for kind, v := range wrongValues {
			if !insertable(field, kind) || field == "id" && (kind == "array" || kind == "time") && f.srv.IsReqlite() {
				// reqlite refuses an array as a primary key, and cannot replace a document
				// whose key is a time ("primary key cannot be changed"); RethinkDB does both.
				continue
			}
			doc := maps.Clone(valid)
			doc["log"] = []any{maps.Clone(valid["log"].([]any)[0].(map[string]any))}
			doc["id"] = uuid.NewString()
			doc["rjqUniqueKey"] = uuid.NewString()
			target, name := doc, field
			if rest, ok := strings.CutPrefix(field, "log.0."); ok {
				target, name = doc["log"].([]any)[0].(map[string]any), rest
			}
			if kind == "missing" {
				delete(target, name)
			} else {
				target[name] = v
			}
			docs = append(docs, garbageDoc{id: doc["id"], field: field, kind: kind})
			batch = append(batch, doc)
		}
	}
	_, err = f.table().Insert(batch).RunWrite(f.raw)
	require.NoError(t, err)
	for i, d := range docs {
		// An event names a job by its id as the driver reads it back (a time in a fixed
		// "+00:00" zone, for one).
		docs[i].name = fmt.Sprint(rawByKey(t, f, d.id)["id"])
	}
	good := f.add(t, 5)

	if base == job.Active {
		_, err := f.q.Review(ctx)
		require.NoError(t, err, "a review over every garbage active document")
	}

	var mu sync.Mutex
	runs := map[string]int{}
	handler := func(ctx context.Context, j *job.Job) (any, error) {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		return "ok", nil
	}
	errEvents := [2]<-chan queue.Event{f.q.Events(ctx, queue.EventError), second.Events(ctx, queue.EventError)}
	require.NoError(t, f.q.Process(handler))
	require.NoError(t, second.Process(handler))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("queue 0 log:\n%s", logs[0].String())
			for _, j := range good {
				t.Logf("good %s: %v", j.ID, f.rawDoc(t, j.ID)["status"])
			}
		}
	})
	// The good jobs wait behind a few hundred documents of the same priority, which
	// reqlite under -race goes through at tens a second: the usual 15 s is too short.
	require.Eventually(t, func() bool {
		for _, j := range good {
			if rawByKey(t, f, j.ID)["status"] != "completed" {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "the good jobs completed")

	// The garbage settles: every document ran, or was reported by some queue, or is one
	// no claim reads (a status that is no job status).
	reported := [2]map[string]int{{}, {}}
	var pending []string
	note := func(i int, e queue.Event) {
		if e.JobID != "" {
			reported[i][e.JobID]++
			assert.ErrorIs(t, e.Err, job.ErrInvalid, "job %s", e.JobID)
		}
	}
	settled := func() bool {
		for i, ch := range errEvents {
			for drained := false; !drained; {
				select {
				case e, ok := <-ch:
					if !ok {
						drained = true
						break
					}
					note(i, e)
				default:
					drained = true
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		pending = pending[:0]
		for _, d := range docs {
			id := d.name
			if runs[id] == 0 && reported[0][id]+reported[1][id] == 0 {
				if doc := rawByKey(t, f, d.id); claimable(doc) {
					pending = append(pending, fmt.Sprintf("%s %s: %v", d.field, d.kind, doc))
				}
			}
		}
		return len(pending) == 0
	}
	assert.Eventually(t, settled, 2*time.Minute, 100*time.Millisecond, "every garbage document ran or was reported")
	assert.Empty(t, pending, "garbage documents that neither ran nor were reported")
	for _, q := range []*queue.Queue{f.q, second} {
		_, err := q.Summary(ctx)
		assert.NoError(t, err, "Summary")
		_, err = q.Review(ctx)
		assert.NoError(t, err, "Review")
	}
	ids := make([]string, len(good))
	for i, j := range good {
		ids[i] = j.ID
	}
	got, err := f.q.GetJob(ctx, ids...)
	require.NoError(t, err)
	for _, j := range got {
		assert.Equal(t, job.Completed, j.Status)
	}
	// Stopped, the queues have run and reported all they will: their channels close.
	for i, q := range []*queue.Queue{f.q, second} {
		require.NoError(t, q.Stop(ctx))
		for e := range errEvents[i] {
			note(i, e)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, d := range docs {
		id := d.name
		what := fmt.Sprintf("%s job, %s %s (id %s)", base, d.field, d.kind, id)
		assert.LessOrEqual(t, runs[id], 1, "%s ran more than once", what)
		for i := range reported {
			assert.LessOrEqual(t, reported[i][id], 1, "%s reported more than once by queue %d", what, i)
			if reported[i][id] == 1 {
				assert.Zero(t, runs[id], "%s was reported and run", what)
				assert.Equal(t, 1, logs[i].linesFor(id), "%s: one log line with its id from queue %d", what, i)
			}
		}
	}
}

// claimable reports whether a stored document is one a claim reads: waiting, failed or
// active (a review fails an active one).
func claimable(doc map[string]any) bool {
	switch doc["status"] {
	case "waiting", "failed", "active":
		return true
	}
	return false
}

// rawByKey reads a stored document by a primary key of any type.
func rawByKey(t *testing.T, f fixture, key any) map[string]any {
	t.Helper()
	cur, err := f.table().Get(key).Run(f.raw)
	require.NoError(t, err)
	defer cur.Close()
	var doc map[string]any
	if err := cur.One(&doc); err != nil && !errors.Is(err, r.ErrEmptyResult) {
		require.NoError(t, err)
	}
	return doc
}
