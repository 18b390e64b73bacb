package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStopEndsAndWaitsForTheGoroutines(t *testing.T) {
	s := New()
	ended := make(chan struct{}, 2)
	for range 2 {
		s.Go(func(ctx context.Context) {
			<-ctx.Done()
			ended <- struct{}{}
		})
	}
	require.NoError(t, s.Stop(context.Background()))
	assert.Len(t, ended, 2, "Stop returns after every goroutine has ended")
	assert.ErrorIs(t, s.Context().Err(), context.Canceled)
}

func TestCancelCause(t *testing.T) {
	s := New()
	boom := errors.New("boom")
	s.Cancel(boom)
	assert.ErrorIs(t, context.Cause(s.Context()), boom)
	require.NoError(t, s.Wait(context.Background()))
}

func TestWaitGivesUpWithItsContext(t *testing.T) {
	s := New()
	release := make(chan struct{})
	s.Go(func(context.Context) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.Stop(ctx), context.DeadlineExceeded, "a goroutine that ignores its context is not waited for past ctx")
	close(release)
	require.NoError(t, s.Wait(context.Background()))
}
