package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// The private copies in fields.go agree with the storage layer's vocabulary, which a test
// may import (package job itself imports no internal package).
func TestFieldsAgreeWithDocfmt(t *testing.T) {
	names := []string{
		docfmt.ID, docfmt.Name, docfmt.Priority, docfmt.Timeout, docfmt.RetryDelay,
		docfmt.RepeatDelay, docfmt.RetryMax, docfmt.RetryCount, docfmt.ProcessCount,
		docfmt.Repeat, docfmt.Progress, docfmt.Status, docfmt.Log, docfmt.DateCreated,
		docfmt.DateEnable, docfmt.DateStarted, docfmt.DateFinished, docfmt.QueueID, docfmt.Data,
		fieldUniqueKey, fieldBackoff, "extra", "Status", "dateChange", "state", "",
	}
	for _, n := range names {
		assert.Equal(t, docfmt.Reserved(n), reservedField(n), n)
	}
	for _, v := range []any{
		float64(1.5), float32(2), 3, int64(4), int32(5), json.Number("6.5"), json.Number("x"),
		"7", nil, true,
	} {
		f, ok := number(v)
		wf, wok := docfmt.Number(v)
		assert.Equal(t, wf, f, "%T %v", v, v)
		assert.Equal(t, wok, ok, "%T %v", v, v)
	}
	tm := time.Date(2024, 3, 1, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	assert.Equal(t, docfmt.Millis(tm), toMillis(tm))
}
