package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffBadInput(t *testing.T) {
	for _, b := range []Backoff{
		{Min: -1}, {Max: -1}, {Min: time.Minute, Max: time.Second}, {Jitter: 1.5}, {Jitter: -0.1},
	} {
		j := New(nil, DefaultOptions()).SetBackoff(b)
		assert.ErrorIs(t, j.Err(), ErrInvalidBackoff, "%+v", b)
		assert.Equal(t, Backoff{}, j.Backoff(), "an invalid policy is not applied")
	}
	j := New(nil, DefaultOptions())
	j.Fields = map[string]any{fieldBackoff: map[string]any{"exponential": true, "min": "x"}}
	assert.Equal(t, Backoff{}, j.Backoff(), "a malformed stored policy reads as linear")
}
