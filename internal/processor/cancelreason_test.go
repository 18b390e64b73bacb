package processor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestCancelReason(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
		ok     bool
	}{
		{job.Cancel("customer left"), "customer left", true},
		{job.Cancel(""), job.MessageCancel, true},
		{fmt.Errorf("wrapped: %w", job.Cancel("why")), "why", true},
		{fmt.Errorf("plain: %w", job.ErrCancel), job.MessageCancel, true},
		{errors.New("other"), "", false},
		{nil, "", false},
	} {
		reason, ok := CancelReason(tc.err)
		assert.Equal(t, tc.reason, reason, "%v", tc.err)
		assert.Equal(t, tc.ok, ok, "%v", tc.err)
	}
	assert.ErrorIs(t, job.Cancel("x"), job.ErrCancel)
	assert.NotErrorIs(t, job.Cancel("x"), job.ErrCancelled, "a handler's cancel is not the context cause")
	assert.Equal(t, "job: cancelled by its handler: x", job.Cancel("x").Error())
}
