package engine

import (
	"testing"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
)

func TestSlotsMayBeFree(t *testing.T) {
	seq := func(status string) map[string]any {
		return map[string]any{"status": status, "rjqSequence": "ledger"}
	}
	plain := func(status string) map[string]any { return map[string]any{"status": status} }
	cases := []struct {
		name     string
		old, new map[string]any
		want     bool
	}{
		{"a run ends", plain("active"), plain("completed"), true},
		{"a run fails", plain("active"), plain("failed"), true},
		{"a claim", plain("waiting"), plain("active"), false},
		{"progress", plain("active"), plain("active"), false},
		{"an add", nil, seq("waiting"), false},
		{"a waiting job of a sequence is cancelled", seq("waiting"), seq("cancelled"), true},
		{"a failed job of a sequence is removed", seq("failed"), nil, true},
		{"a waiting job without one is cancelled", plain("waiting"), plain("cancelled"), false},
		{"a finished job of a sequence is removed", seq("completed"), nil, true},
		{"a finished job of a sequence is rewritten", seq("completed"), seq("completed"), false},
		{"a job of a sequence is delayed", seq("waiting"), seq("waiting"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := slotsMayBeFree(changefeed.Change{Old: c.old, New: c.new}); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
