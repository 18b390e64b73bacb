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

func TestSchedulesFireAndALimitHoldsMailBack(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out), out.String())
	assert.Regexp(t, `^schedule daily-sales \(CRON_TZ=Europe/Paris 0 6 \* \* 1-5\): next at 06:00 Paris time, on a weekday
schedule tick \(@every 1s\): next within a second
limit mail: 2 starts per 1h0m0s
tick: the Queue Master enqueued a job named tick and it ran; unscheduled
mail: 2 completed; 1 waiting for the rate
limit removed: the mail to (ann|bob|cat) ran
$`, out.String())
}
