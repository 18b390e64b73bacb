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

func TestTheJoinWaitsForEveryPart(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out, 3))
	assert.Equal(t, "4 jobs released as their parents completed\n"+
		"joined: part 1 of 3 parts; part 2 of 3 parts; part 3 of 3 parts\n", out.String())
}
