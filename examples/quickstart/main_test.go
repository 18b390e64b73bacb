package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestQuickstart(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	cxn := queuetest.Connect(t)
	require.NoError(t, run(ctx, cxn, &out))
	// The payload is stored by its json names, as the README says: a Node.js worker reads
	// job.data.to.
	id := regexp.MustCompile(`added job ([0-9a-f-]{36})`).FindStringSubmatch(out.String())
	require.NotNil(t, id, out.String())
	var data map[string]any
	require.NoError(t, r.DB(cxn.DB).Table("quickstart").Get(id[1]).Field("data").ReadOne(&data, testserver.Session(t)))
	assert.Equal(t, map[string]any{"to": "ann@example.com", "subject": "Welcome"}, data)
	assert.Regexp(t, regexp.MustCompile(`^added job ([0-9a-f-]{36}) \(waiting, priority high\)
sending "Welcome" to ann@example.com
job ([0-9a-f-]{36}) completed
summary: \{Waiting:0 Active:0 Completed:1 Cancelled:0 Failed:0 Terminated:0 Total:1\}
$`), out.String())
}
