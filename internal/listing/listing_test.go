package listing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFromTakesEachFieldForWhatItIs(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		row  map[string]any
		want Job
	}{
		{"a job", map[string]any{"id": "a", "name": "n", "status": "waiting", "priority": 40.0, "progress": 50.0, "dateCreated": created},
			Job{ID: "a", Name: "n", Status: "waiting", Priority: 40, Progress: 50, DateCreated: created}},
		{"nothing", map[string]any{}, Job{}},
		{"garbage", map[string]any{"id": 7.0, "name": []any{1.0}, "status": map[string]any{"a": 1.0}, "priority": "high", "progress": true, "dateCreated": "yesterday"},
			Job{ID: "7", Name: "[1]", Status: "map[a:1]"}},
	} {
		assert.Equal(t, c.want, From(c.row), c.name)
	}
}
