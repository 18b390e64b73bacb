package queue

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSummaryPrintsLikeAStructAndShowsFinishedAsOfOnlyWhenSet(t *testing.T) {
	asOf := time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		s    Summary
		want string
	}{
		{"exact", Summary{Completed: 1, Total: 1}, "{Waiting:0 Active:0 Completed:1 Cancelled:0 Failed:0 Terminated:0 Total:1}"},
		{"every field", Summary{1, 2, 3, 4, 5, 6, 28, time.Time{}, false, 0, 7}, "{Waiting:1 Active:2 Completed:3 Cancelled:4 Failed:5 Terminated:6 Total:28 Blocked:7}"},
		{"not counted yet", Summary{Waiting: 1, Total: 101, FinishedUnknown: true, FinishedEstimate: 100},
			"{Waiting:1 Active:0 Completed:0 Cancelled:0 Failed:0 Terminated:0 Total:101 FinishedUnknown:true FinishedEstimate:100}"},
		{"from the tally", Summary{Completed: 7, Total: 7, FinishedAsOf: asOf.In(time.FixedZone("x", 3600))},
			"{Waiting:0 Active:0 Completed:7 Cancelled:0 Failed:0 Terminated:0 Total:7 FinishedAsOf:2026-11-24T10:30:00Z}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.String())
			assert.Equal(t, tc.want, fmt.Sprintf("%+v", tc.s))
			assert.Equal(t, tc.want, fmt.Sprintf("%v", tc.s))
		})
	}
}
