package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The reason of a job cancelled down a workflow names the job whose failure started it,
// and how it ended: as the parent of its children, as the ancestor (with its name) of
// the jobs further down.
func TestCascadeReasonsNameTheOrigin(t *testing.T) {
	const id = "0cd09abf-47c8-4886-a736-41f8ec48e0b3"
	for _, tc := range []struct {
		name   string
		o      origin
		direct bool
		want   string
	}{
		{"a child of a terminated job", origin{id: id, name: "import", status: job.Terminated}, true, "parent " + id + " was terminated"},
		{"further down", origin{id: id, name: "import", status: job.Terminated}, false, "ancestor " + id + ` ("import") was terminated`},
		{"cancelled", origin{id: id, name: "import", status: job.Cancelled}, false, "ancestor " + id + ` ("import") was cancelled`},
		{"removed", origin{id: id, name: "import"}, true, "parent " + id + " was removed before it completed"},
		{"removed, further down", origin{id: id, name: "import"}, false, "ancestor " + id + ` ("import") was removed before it completed`},
		{"named by its id", origin{id: id, name: id, status: job.Terminated}, false, "ancestor " + id + " was terminated"},
		{"name unknown", origin{id: id, status: job.Terminated}, false, "ancestor " + id + " was terminated"},
		{"a long name, shortened", origin{id: id, name: strings.Repeat("n", 500), status: job.Cancelled}, false,
			"ancestor " + id + ` ("` + strings.Repeat("n", 40) + `"… (500 bytes)) was cancelled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.o.reason(tc.direct))
		})
	}
}
