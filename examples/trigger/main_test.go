package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestATriggerMakesTheJobsOfAnOrdersVersions(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out), out.String())
	assert.Equal(t, `job: order o1 is placed
job: order o1 is paid
job: order o2 is placed
trigger orders on table orders: 3 jobs, run here: true, caught up
`, out.String())
}
