package queue

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/engine"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The queue's exported errors and constants are declared here, not as the engine's
// values (which would show internal names in go doc); they must mean and say the same.
func TestPublicNamesAgreeWithTheEngine(t *testing.T) {
	assert.Equal(t, engine.DefaultCancelReason, DefaultCancelReason)
	assert.Equal(t, engine.RemoveImmediately, RemoveFinishedJobsImmediately)
	for _, p := range publicErrors {
		assert.Equal(t, p.internal.Error(), p.public.Error())
		assert.Equal(t, errors.Is(p.internal, job.ErrInvalid), errors.Is(p.public, job.ErrInvalid), p.public)

		got := publicErr(fmt.Errorf("context: %w", p.internal))
		assert.ErrorIs(t, got, p.public, "the queue's error matches")
		assert.ErrorIs(t, got, p.internal, "and still the engine's")
		assert.Equal(t, "context: "+p.internal.Error(), got.Error(), "the message is unchanged")
	}
	assert.NoError(t, publicErr(nil))
	other := errors.New("disk full")
	assert.Same(t, other, publicErr(other))

	pe := publicErr(fmt.Errorf("run: %w", &processor.PanicError{Value: other, Stack: []byte("stack")}))
	var qpe *PanicError
	assert.ErrorAs(t, pe, &qpe)
	assert.Equal(t, []byte("stack"), qpe.Stack)
	assert.ErrorIs(t, pe, other, "the panic value is unwrapped")
}
