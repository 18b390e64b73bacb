package rjqweb

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The job list answers blocked jobs, a group's jobs of a status and a sequence's jobs;
// a job's page says what it waits for; the page offers each filter.
func TestJobListFiltersAndWhatAJobWaitsFor(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hour := time.Now().Add(time.Hour)
	parent := f.q.CreateJob(nil).SetName("fetch").SetDateEnable(hour)
	child := f.q.CreateJob(nil).SetDependsOn(parent.ID)
	grouped := f.q.CreateJob(nil).SetGroup("tenant-q").SetDateEnable(hour)
	sequenced := f.q.CreateJob(nil).SetSequence("acct-7").SetDateEnable(hour)
	_, err := f.q.AddJob(ctx, parent, child, grouped, sequenced)
	require.NoError(t, err)

	type row struct{ ID, Status, Group, Sequence string }
	list := func(query string) (int, []row, string) {
		res, body := f.do(t, request{path: "/jobs/api/jobs?" + query})
		var rows []row
		if res.StatusCode == http.StatusOK {
			require.NoError(t, json.Unmarshal([]byte(body), &rows))
		}
		return res.StatusCode, rows, body
	}
	code, rows, body := list("status=blocked")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []row{{ID: child.ID, Status: "blocked"}}, rows)
	code, rows, body = list("status=waiting&group=tenant-q")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []row{{ID: grouped.ID, Status: "waiting", Group: "tenant-q"}}, rows)
	require.Eventually(t, func() bool {
		code, rows, _ = list("sequence=acct-7")
		return code == http.StatusOK && len(rows) == 1
	}, 30*time.Second, 200*time.Millisecond, "the index of sequences is built")
	assert.Equal(t, []row{{ID: sequenced.ID, Status: "waiting", Sequence: "acct-7"}}, rows)
	code, _, body = list("group=tenant-q")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "give status too")

	waits := func(id string) []map[string]any {
		res, body := f.do(t, request{path: "/jobs/api/jobs/" + id})
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		var shown struct{ WaitsFor []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(body), &shown))
		return shown.WaitsFor
	}
	got := waits(child.ID)
	require.Len(t, got, 1)
	assert.Equal(t, "parents", got[0]["kind"])
	assert.Equal(t, "parent "+parent.ID+" (fetch, waiting)", got[0]["text"])
	got = waits(grouped.ID)
	require.Len(t, got, 1)
	assert.Equal(t, "delay", got[0]["kind"])

	_, page := f.do(t, request{path: "/jobs/"})
	for _, want := range []string{"<option>blocked</option>", `id="group"`, `id="sequence"`, `id="job-waits"`} {
		assert.Contains(t, page, want)
	}
}
