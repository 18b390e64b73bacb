package rjqweb

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Documents written by hand with any field of any wrong type never break a page or a
// call of the API: the lists, the counts and the metrics answer, and a job page answers
// without a server error.
func TestGarbageDocumentsNeverBreakTheDashboard(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	table := r.DB(f.db).Table(testQueue)
	var valid map[string]any
	cur, err := table.Get(f.waiting).Run(f.session, r.RunOpts{Context: ctx})
	require.NoError(t, err)
	require.NoError(t, cur.One(&valid))
	fields := []string{"name", "priority", "timeout", "retryDelay", "repeatDelay", "retryMax", "retryCount",
		"processCount", "progress", "repeat", "status", "log", "dateCreated", "dateEnable", "dateStarted",
		"dateFinished", "queueId", "data"}
	wrong := map[string]any{"string": "garbage", "number": -5, "object": map[string]any{"a": 1}, "array": []any{1},
		"bool": true, "null": nil, "time": time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), "huge": 1e300}
	var docs []any
	var ids []string
	for _, status := range []string{"waiting", "active", "failed", "completed"} {
		for _, field := range fields {
			for kind, v := range wrong {
				doc := maps.Clone(valid)
				doc["id"], doc["status"] = uuid.NewString(), status
				doc[field] = v
				if kind == "null" && field == "log" {
					delete(doc, field)
				}
				docs = append(docs, doc)
				ids = append(ids, doc["id"].(string))
			}
		}
	}
	_, err = table.Insert(docs).RunWrite(f.session, r.RunOpts{Context: ctx})
	require.NoError(t, err)

	paths := []string{"/jobs/", "/jobs/api/summary", "/jobs/api/jobs", "/jobs/metrics", "/jobs/api/throughput"}
	for _, s := range []string{"waiting", "active", "failed", "completed", "cancelled", "terminated"} {
		paths = append(paths, "/jobs/api/jobs?status="+s)
	}
	for _, p := range paths {
		res, body := f.do(t, request{path: p})
		assert.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", p, body)
	}
	for _, id := range ids {
		res, body := f.do(t, request{path: "/jobs/api/jobs/" + id})
		assert.Less(t, res.StatusCode, 500, "job %s: %s", id, body)
	}
}
