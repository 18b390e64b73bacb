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

func TestFlowControlHoldsJobsBack(t *testing.T) {
	ctx := queuetest.Context(t, time.Minute)
	var out bytes.Buffer
	require.NoError(t, run(ctx, queuetest.Connect(t), &out))
	assert.Equal(t, "report added twice: the second add returned the first job: true (duplicate: true)\n"+
		"group customer-42: running limit 1, rate 2 per 1s, 3 waiting\n"+
		"customer-42: 3 imports ran, at most 1 at once; the third waited for the rate: true\n"+
		"account-7: at most 1 at once, in add order: deposit 100 (failed, to be retried), deposit 100, withdraw 30, deposit 5\n"+
		"report ran 1 time(s)\n", out.String())
}
