package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestTheMasterBringsBackTheDeadWorkersJob(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out, 4))
	text := out.String()
	victim := regexp.MustCompile(`^worker 0 died while running job ([0-9a-f-]{36})\n`).FindStringSubmatch(text)
	require.Len(t, victim, 2, text)
	id := regexp.QuoteMeta(victim[1])
	// The master's review line is not asserted: on a loaded machine a worker's own review,
	// when it starts processing, can be the one that finds the orphan.
	assert.Regexp(t, `(?m)^worker [12] runs job `+id+` again \(process count 2, retry count 1\)$`, text)
	assert.Regexp(t, `(?m)^job `+id+` completed after all$`, text)
	assert.Regexp(t, `all 4 jobs completed\n$`, text)
}
