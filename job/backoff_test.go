package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryDelayFor(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"linear first", Backoff{}, 1, 10 * time.Minute},
		{"linear third", Backoff{}, 3, 30 * time.Minute},
		{"exponential first", Backoff{Exponential: true, Min: time.Second}, 1, time.Second},
		{"exponential fourth", Backoff{Exponential: true, Min: time.Second}, 4, 8 * time.Second},
		{"exponential capped", Backoff{Exponential: true, Min: time.Second, Max: 5 * time.Second}, 4, 5 * time.Second},
		{"exponential huge n stays capped", Backoff{Exponential: true, Min: time.Second, Max: time.Hour}, 1000, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New(nil, nil, DefaultOptions()).SetBackoff(tt.b)
			require.NoError(t, j.Err())
			assert.Equal(t, tt.want, j.RetryDelayFor(tt.n))
		})
	}
}

func TestBackoffJitterStaysInBounds(t *testing.T) {
	j := New(nil, nil, DefaultOptions()).SetBackoff(Backoff{Exponential: true, Min: time.Second, Jitter: 0.5})
	for range 200 {
		d := j.RetryDelayFor(2)
		assert.GreaterOrEqual(t, d, time.Second)
		assert.LessOrEqual(t, d, 3*time.Second)
	}
}

func TestBackoffRoundTripsThroughTheDocument(t *testing.T) {
	b := Backoff{Exponential: true, Min: 2 * time.Second, Max: time.Minute, Jitter: 0.1}
	j := New(nil, nil, DefaultOptions()).SetBackoff(b)
	doc := j.Document()
	back, err := FromDocument(nil, jsonRoundTrip(t, doc))
	require.NoError(t, err)
	assert.Equal(t, b, back.Backoff(), "a Go worker after a Go worker keeps the policy")
	assert.Equal(t, Backoff{}, New(nil, nil, DefaultOptions()).SetBackoff(b).SetBackoff(Backoff{}).Backoff())
}

func TestBackoffBadInput(t *testing.T) {
	for _, b := range []Backoff{
		{Min: -1}, {Max: -1}, {Min: time.Minute, Max: time.Second}, {Jitter: 1.5}, {Jitter: -0.1},
	} {
		j := New(nil, nil, DefaultOptions()).SetBackoff(b)
		assert.ErrorIs(t, j.Err(), ErrInvalidBackoff, "%+v", b)
		assert.Equal(t, Backoff{}, j.Backoff(), "an invalid policy is not applied")
	}
	j := New(nil, nil, DefaultOptions())
	j.Fields = map[string]any{fieldBackoff: map[string]any{"exponential": true, "min": "x"}}
	assert.Equal(t, Backoff{}, j.Backoff(), "a malformed stored policy reads as linear")
}

// jsonRoundTrip gives doc as a driver gives it back: numbers as float64.
func jsonRoundTrip(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	for _, k := range []string{"dateCreated", "dateEnable"} {
		out[k] = doc[k]
	}
	return out
}
