package master

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryRunsOnItsIntervalUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	start := time.Now()
	first := make(chan time.Duration, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 20*time.Millisecond, func(context.Context) {
			if calls.Add(1) == 1 {
				first <- time.Since(start)
			}
		})
	}()
	assert.GreaterOrEqual(t, <-first, 20*time.Millisecond, "the first review comes one interval after the start")
	require.Eventually(t, func() bool { return calls.Load() >= 3 }, 5*time.Second, time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return when its context ended")
	}
	n := calls.Load()
	time.Sleep(60 * time.Millisecond) // three intervals: nothing may run after the stop
	assert.Equal(t, n, calls.Load())
}
