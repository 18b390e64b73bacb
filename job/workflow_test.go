package job

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// ParentResult reads what a released child keeps of each parent's completion entry, in
// the forms this library writes (the result alone, the message alone for a parent that
// completed without a result, or the whole entry, as earlier versions did).
func TestParentResultReadsWhatTheChildKept(t *testing.T) {
	ids := map[string]string{"other": uuid.NewString()}
	for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
		ids[p] = uuid.NewString()
	}
	j := New("child", DefaultOptions()).SetDependsOn(ids["p1"], ids["p2"], ids["p3"], ids["p4"], ids["p5"])
	require.NoError(t, j.Err())
	j.Fields[docfmt.ParentResults] = map[string]any{
		ids["p1"]: map[string]any{"data": "one"},
		ids["p2"]: map[string]any{"message": MessageCompleted},
		ids["p3"]: map[string]any{"message": MessageCompleted, "data": "three", "date": nil},
		ids["p4"]: map[string]any{},
		ids["p5"]: map[string]any{"errorMessage": ResultNotStoredPrefix + "too big"},
	}
	for _, tc := range []struct {
		id   string
		want string
		err  error
	}{
		{id: "p1", want: "one"},
		{id: "p2", want: ""},
		{id: "p3", want: "three"},
		{id: "p4", err: ErrNoResult},
		{id: "p5", err: ErrResultNotStored},
		{id: "other", err: ErrNotParent},
	} {
		t.Run(tc.id, func(t *testing.T) {
			var got string
			err := j.ParentResult(ids[tc.id], &got)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
