package errtext

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestKey(t *testing.T) {
	long := strings.Repeat("k", 1000)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"short", "tenant-7", `"tenant-7"`},
		{"48 bytes are quoted whole", strings.Repeat("a", 48), `"` + strings.Repeat("a", 48) + `"`},
		{"longer is cut to 40 and its length", long, `"` + strings.Repeat("k", 40) + `"… (1000 bytes)`},
		{"cut at a character's start", strings.Repeat("a", 39) + strings.Repeat("é", 20), `"` + strings.Repeat("a", 39) + `"… (79 bytes)`},
		{"not UTF-8 is escaped", strings.Repeat("\xff", 60), `"` + strings.Repeat(`\xff`, 40) + `"… (60 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Key(tc.in))
		})
	}
}

func TestTimeHasNoMonotonicClock(t *testing.T) {
	now := time.Now().Add(-time.Minute)
	got := Time(now)
	assert.NotContains(t, got, "m=")
	parsed, err := time.Parse(time.RFC3339Nano, got)
	assert.NoError(t, err)
	assert.True(t, parsed.Equal(now))
	assert.Equal(t, "2030-01-02T03:04:05.006Z", Time(time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)))
}
