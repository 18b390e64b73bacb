package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestParseLimit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		job     string
		l       Limit
		wantErr bool
	}{
		{"rate", "mail", Limit{Starts: 10, Per: time.Minute}, false},
		{"window", "mail", Limit{Window: &Window{From: "09:00", To: "17:00"}}, false},
		{"both, with a zone", "mail", Limit{Starts: 1, Per: time.Second, Window: &Window{From: "22:00", To: "06:00", Location: "Europe/Paris"}}, false},
		{"no name", "", Limit{Starts: 1, Per: time.Second}, true},
		{"nothing to limit", "mail", Limit{}, true},
		{"rate without period", "mail", Limit{Starts: 1}, true},
		{"period without rate", "mail", Limit{Per: time.Second}, true},
		{"negative", "mail", Limit{Starts: -1, Per: time.Second}, true},
		{"bad clock", "mail", Limit{Window: &Window{From: "9am", To: "17:00"}}, true},
		{"empty window", "mail", Limit{Window: &Window{From: "09:00", To: "09:00"}}, true},
		{"unknown zone", "mail", Limit{Window: &Window{From: "09:00", To: "10:00", Location: "Mars/Olympus"}}, true},
	} {
		_, err := parseLimit(tt.job, tt.l)
		if tt.wantErr {
			assert.ErrorIs(t, err, ErrInvalidLimit, tt.name)
			assert.ErrorIs(t, err, job.ErrInvalid, tt.name)
		} else {
			assert.NoError(t, err, tt.name)
		}
	}
}
