package bulk

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour, "90m": 90 * time.Minute, "0s": 0} {
		got, err := ParseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "7", "d", "-1d", "-5m", "week"} {
		_, err := ParseAge(in)
		assert.Error(t, err, in)
	}
}
