package dbinit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fixed  time.Duration
		master bool
		random time.Duration
		want   time.Duration
	}{
		{"worker waits the fixed part and the random part", time.Second, false, 300 * time.Millisecond, 1300 * time.Millisecond},
		{"a master skips the fixed part", time.Second, true, 300 * time.Millisecond, 300 * time.Millisecond},
		{"negative fixed part means none", -1, false, 10 * time.Millisecond, 10 * time.Millisecond},
		{"zero everything", 0, false, 0, 0},
	} {
		assert.Equal(t, tc.want, Delay(tc.fixed, tc.master, tc.random), tc.name)
	}
}

func TestRandomDelayRange(t *testing.T) {
	seen := map[bool]bool{}
	for range 1000 {
		d := RandomDelay()
		assert.GreaterOrEqual(t, d, time.Duration(0))
		assert.Less(t, d, MaxRandomDelay)
		seen[d < MaxRandomDelay/2] = true
	}
	assert.Len(t, seen, 2, "the delay spreads over the whole range")
}
