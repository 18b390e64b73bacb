package job

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a job's retry delay policy. The zero Backoff is the original's: linear,
// RetryDelay × the retry count. Exponential waits Min·2^(retryCount-1), capped at Max
// (no cap when Max is 0), then moved by a random fraction of up to ±Jitter.
//
// A job's Backoff is stored in its document's extra field "rjqBackoff" (durations in
// milliseconds), so every Go worker that retries the job applies it. The Node.js library
// ignores that field: a Node worker retries such a job linearly, RetryDelay × retryCount.
type Backoff struct {
	Exponential bool
	Min, Max    time.Duration
	// Jitter is the largest fraction, within 0..1, by which a delay is moved at random.
	Jitter float64
}

// ErrInvalidBackoff is wrapped by the error of SetBackoff given a negative duration, Max
// below Min, or a jitter outside 0..1.
var ErrInvalidBackoff = fmt.Errorf("%w backoff: want Min >= 0, Max 0 or >= Min, Jitter within 0..1", ErrInvalid)

func (b Backoff) validate() error {
	if b.Min < 0 || b.Max < 0 || (b.Max != 0 && b.Max < b.Min) || !(b.Jitter >= 0 && b.Jitter <= 1) {
		return fmt.Errorf("%w (got %+v)", ErrInvalidBackoff, b)
	}
	return nil
}

// SetBackoff sets the job's retry delay policy; the zero Backoff restores the linear
// default. An invalid policy is kept as the job's error (see Err) and not applied.
func (j *Job) SetBackoff(b Backoff) *Job {
	if err := b.validate(); err != nil {
		return j.fail(err)
	}
	if b == (Backoff{}) {
		delete(j.Fields, fieldBackoff)
		return j
	}
	j.setField(fieldBackoff, map[string]any{
		"exponential": b.Exponential,
		"min":         b.Min.Milliseconds(),
		"max":         b.Max.Milliseconds(),
		"jitter":      b.Jitter,
	})
	return j
}

// Backoff returns the job's retry delay policy, as SetBackoff stored it. A stored value
// that is not a valid policy (written by hand, say) reads as the linear default.
func (j *Job) Backoff() Backoff {
	m, ok := j.Fields[fieldBackoff].(map[string]any)
	if !ok {
		return Backoff{}
	}
	ms := func(k string) (time.Duration, bool) {
		n, ok := number(m[k])
		return time.Duration(n) * time.Millisecond, ok && n >= 0 && n <= maxSafeInt
	}
	exp, ok1 := m["exponential"].(bool)
	lo, ok2 := ms("min")
	hi, ok3 := ms("max")
	jitter, ok4 := number(m["jitter"])
	ok4 = ok4 && !math.IsNaN(jitter)
	b := Backoff{Exponential: exp, Min: lo, Max: hi, Jitter: jitter}
	if !ok1 || !ok2 || !ok3 || !ok4 || b.validate() != nil {
		return Backoff{}
	}
	return b
}

// Delay is how long a job with this policy waits before its retry number n (1 for the
// first) when its RetryDelay is linear: linear × n for the linear policy, else the
// exponential delay with its jitter drawn afresh. The queue computes every retry with it.
func (b Backoff) Delay(linear time.Duration, n int) time.Duration {
	if !b.Exponential {
		return time.Duration(n) * linear
	}
	d := b.Min
	for i := 1; i < n && (b.Max == 0 || d < b.Max) && d < math.MaxInt64/2; i++ {
		d *= 2
	}
	if b.Max != 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	return max(d, 0)
}

// setField sets an extra top-level field of the document.
func (j *Job) setField(k string, v any) {
	if j.Fields == nil {
		j.Fields = make(map[string]any)
	}
	j.Fields[k] = v
}
