package window

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, from, to, loc string
		wantErr             bool
	}{
		{"day", "09:00", "17:00", "", false},
		{"night, with a zone", "22:00", "06:00", "Europe/Paris", false},
		{"bad clock", "9am", "17:00", "", true},
		{"empty window", "09:00", "09:00", "", true},
		{"unknown zone", "09:00", "10:00", "Mars/Olympus", true},
	} {
		_, err := Parse(tt.from, tt.to, tt.loc)
		assert.Equal(t, tt.wantErr, err != nil, "%s: %v", tt.name, err)
	}
}

func TestWindowAt(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	at := func(h, m int, loc *time.Location) time.Time { return time.Date(2026, 11, 22, h, m, 0, 0, loc) }
	day := Window{from: clock{9, 0}, to: clock{17, 0}, loc: time.UTC}
	night := Window{from: clock{22, 0}, to: clock{6, 0}, loc: time.UTC}
	inParis := Window{from: clock{9, 0}, to: clock{10, 0}, loc: paris}
	for _, tt := range []struct {
		name  string
		w     Window
		t     time.Time
		open  bool
		opens time.Time
	}{
		{"day, inside", day, at(12, 0, time.UTC), true, time.Time{}},
		{"day, at From", day, at(9, 0, time.UTC), true, time.Time{}},
		{"day, at To it has closed", day, at(17, 0, time.UTC), false, at(9, 0, time.UTC).AddDate(0, 0, 1)},
		{"day, before", day, at(8, 59, time.UTC), false, at(9, 0, time.UTC)},
		{"night, late evening", night, at(23, 0, time.UTC), true, time.Time{}},
		{"night, early morning", night, at(5, 59, time.UTC), true, time.Time{}},
		{"night, afternoon", night, at(15, 0, time.UTC), false, at(22, 0, time.UTC)},
		{"zone: 8:30 UTC is 9:30 in Paris", inParis, at(8, 30, time.UTC), true, time.Time{}},
		{"zone: 9:30 UTC is 10:30 in Paris", inParis, at(9, 30, time.UTC), false, at(9, 0, paris).AddDate(0, 0, 1)},
	} {
		open, opens := tt.w.At(tt.t)
		assert.Equal(t, tt.open, open, tt.name)
		assert.True(t, tt.opens.Equal(opens), "%s: opens %v, want %v", tt.name, opens, tt.opens)
	}
}

func TestWindowAtOnTheDayTheClockJumps(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	// 2026-03-29 02:00 CET becomes 03:00 CEST: a window from 02:30 has no 02:30 that day.
	w := Window{from: clock{2, 30}, to: clock{5, 0}, loc: paris}
	before := time.Date(2026, 3, 29, 1, 59, 0, 0, paris)
	open, opens := w.At(before)
	assert.False(t, open)
	assert.True(t, opens.After(before), "it opens later that day: %v", opens)
	open, _ = w.At(time.Date(2026, 3, 29, 3, 31, 0, 0, paris))
	assert.True(t, open, "open after the jump")
}
