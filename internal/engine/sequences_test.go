package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// The jobs of a sequence are placed a millisecond after the one ahead that waits; a
// delayed or debounced job keeps its time, a tail far ahead counts as TurnsAhead ahead,
// and a tail that runs holds no place.
func TestSequenceJobsArePlacedAfterTheOneAhead(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	ms := time.Millisecond
	s := newSequenceSpacing(map[string]rdb.SequenceTail{
		"waits": {ID: "w", Waiting: now.Add(5 * ms)},
		"runs":  {ID: "r"},
		"far":   {ID: "f", Waiting: now.Add(24 * time.Hour)},
	}, now)
	for _, c := range []struct {
		key   string
		at    time.Time
		fixed bool
		want  time.Time
	}{
		{"waits", now, false, now.Add(6 * ms)},
		{"waits", now, false, now.Add(7 * ms)},
		{"runs", now, false, now},
		{"runs", now, false, now.Add(ms)},
		{"new", now.Add(-ms), false, now.Add(-ms)},
		{"new", now.Add(-ms), false, now},
		{"new", now.Add(time.Minute), true, now.Add(time.Minute)}, // delayed: kept
		{"new", now, false, now.Add(rdb.TurnsAhead + ms)},         // behind it, capped
		{"far", now, false, now.Add(rdb.TurnsAhead + ms)},
	} {
		assert.Equal(t, c.want, s.place(c.key, c.at, c.fixed), "%s at %v", c.key, c.at.Sub(now))
	}
}
