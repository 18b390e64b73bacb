package dbinit

import (
	"math/rand/v2"
	"time"
)

// MaxRandomDelay bounds the random part of the init delay, as the original hard-codes it.
const MaxRandomDelay = time.Second

// Delay is how long a queue waits before asserting its database: the fixed part (none when
// negative, and none for a Queue Master, which should be first) plus random, a value in
// [0, MaxRandomDelay) that spreads queues started together.
func Delay(fixed time.Duration, master bool, random time.Duration) time.Duration {
	if master || fixed < 0 {
		fixed = 0
	}
	return fixed + random
}

// RandomDelay returns a random duration in [0, MaxRandomDelay).
func RandomDelay() time.Duration {
	return rand.N(MaxRandomDelay)
}
