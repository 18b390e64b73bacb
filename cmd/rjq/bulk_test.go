package main

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
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

// storedJobs numbers the documents storedJob makes, for their ids.
var storedJobs int

// storedJob is a job document as the libraries store it, written by the test directly,
// so that its status and dates are what the test needs.
func storedJob(name string, status job.Status, finished time.Time) map[string]any {
	now := time.Now().UTC().Truncate(time.Millisecond)
	storedJobs++
	doc := map[string]any{
		"id": job.UniqueID(strconv.FormatInt(now.UnixNano(), 10) + "/" + strconv.Itoa(storedJobs)), "name": name, "priority": 40, "timeout": 300000, "retryDelay": 600000,
		"repeatDelay": 300000, "retryMax": 3, "retryCount": 1, "processCount": 1, "repeat": false,
		"progress": 0, "status": string(status), "log": []any{}, "dateCreated": now,
		// In an hour: a failed job that no worker would take meanwhile.
		"dateEnable": now.Add(time.Hour), "dateStarted": now, "dateFinished": nil, "queueId": "test:db:q:1:u",
	}
	if !finished.IsZero() {
		doc["dateFinished"] = finished.UTC().Truncate(time.Millisecond)
	}
	return doc
}

// The bulk forms of reanimate and remove against a server, in slices smaller than the
// selection: the counts, the statuses left, and the jobs outside the filter untouched.
func TestBulkReanimateAndRemove(t *testing.T) {
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{MasterInterval: -1, Heartbeat: -1}))
	require.NoError(t, err)
	defer func() { _ = q.Stop(context.Background()) }()
	require.NoError(t, q.Ready(ctx))
	s := testserver.Session(t)
	table := r.DB(db).Table(queue.DefaultName)
	old, recent := time.Now().Add(-10*24*time.Hour), time.Now().Add(-time.Hour)
	var docs []any
	count := map[string]int{}
	add := func(n int, name string, status job.Status, finished time.Time) {
		for range n {
			docs = append(docs, storedJob(name, status, finished))
		}
		count[name+"/"+string(status)] += n
	}
	add(25, "mail", job.Failed, time.Time{})
	add(2, "other", job.Failed, time.Time{})
	add(3, "mail", job.Terminated, old)
	add(12, "mail", job.Completed, old)
	add(4, "mail", job.Completed, recent)
	add(5, "other", job.Completed, old)
	add(6, "mail", job.Cancelled, old)
	_, err = table.Insert(docs).RunWrite(s)
	require.NoError(t, err)

	bin := binary(t)
	base := []string{"--addr", addr, "--db", db}
	statuses := func() map[string]int {
		var rows []struct {
			Name, Status string
		}
		require.NoError(t, readAll(ctx, s, table.Filter(r.Row.HasFields("status")).Pluck("name", "status"), &rows))
		got := map[string]int{}
		for _, row := range rows {
			got[row.Name+"/"+row.Status]++
		}
		return got
	}

	res := rjq(t, bin, append(base, "reanimate", "--status", "failed", "--name", "mail", "--batch", "10")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "reanimated 25 jobs\n", res.stdout)
	assert.Equal(t, 3, strings.Count(res.stderr, "rjq: reanimated "), "slices of 10, 10 and 5: %s", res.stderr)
	assert.Contains(t, res.stderr, "(25 so far)")
	got := statuses()
	assert.Equal(t, 25, got["mail/waiting"])
	assert.Zero(t, got["mail/failed"])
	assert.Equal(t, 2, got["other/failed"], "another name's jobs stay")
	assert.Equal(t, 3, got["mail/terminated"], "another status's jobs stay")

	res = rjq(t, bin, append(base, "--json", "remove", "--status", "completed", "--older-than", "7d", "--name", "mail", "--batch", "5")...)
	require.Equal(t, 0, res.code, res.stderr)
	var removed map[string]int
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &removed))
	assert.Equal(t, map[string]int{"removed": 12}, removed)
	assert.Contains(t, res.stderr, "(12 so far)")
	got = statuses()
	assert.Equal(t, 4, got["mail/completed"], "the jobs finished within 7 days stay")
	assert.Equal(t, 5, got["other/completed"], "another name's jobs stay")
	assert.Equal(t, 6, got["mail/cancelled"], "another status's jobs stay")

	res = rjq(t, bin, append(base, "remove", "--status", "terminated", "--older-than", "1d")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "removed 3 jobs\n", res.stdout)
	res = rjq(t, bin, append(base, "reanimate", "--status", "terminated")...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "reanimated 0 jobs\n", res.stdout)

	// Bad input: exit 2, nothing changed.
	before := statuses()
	for _, args := range [][]string{
		{"reanimate", "--status", "completed"},
		{"reanimate", "--status", "failed", job.UniqueID("x")},
		{"reanimate", "--name", "mail"},
		{"remove", "--status", "completed"},
		{"remove", "--status", "waiting", "--older-than", "1d"},
		{"remove", "--status", "completed", "--older-than", "soon"},
		{"remove", "--status", "completed", "--older-than", "1d", "--batch", "5000"},
		{"remove", "--older-than", "1d"},
	} {
		res := rjq(t, bin, append(base, args...)...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res.stderr)
		assert.Empty(t, res.stdout, "%v", args)
	}
	assert.Equal(t, before, statuses())

	// The by-id forms still work.
	var one []string
	require.NoError(t, readAll(ctx, s, table.Filter(map[string]any{"status": "cancelled"}).Limit(1).Field("id"), &one))
	res = rjq(t, bin, append(base, "reanimate", one[0])...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "reanimate "+one[0]+"\n", res.stdout)
	res = rjq(t, bin, append(base, "remove", one[0])...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "remove "+one[0]+"\n", res.stdout)
}
