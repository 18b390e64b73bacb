package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestTheAdderSeesTheWorkersEvents(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out, 2))
	text := out.String()
	assert.Equal(t, 2, strings.Count(text, "completed "), text)
	assert.Equal(t, 2, strings.Count(text, "active "), text)
	assert.Equal(t, 2, strings.Count(text, "from worker (local: false): 50%"), text)
	assert.NotContains(t, text, "local: true", "the adder only hears the worker, through the feed")
}
