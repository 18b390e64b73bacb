package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

func TestGroupStatsJoinLimitsAndCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits map[string]int
		rates  map[string]GroupRate
		counts map[string]rdb.GroupCount
		want   []GroupStat
	}{
		{name: "nothing", want: []GroupStat{}},
		{name: "counts without limits", counts: map[string]rdb.GroupCount{"b": {Waiting: 2}, "a": {Active: 1}},
			want: []GroupStat{{Group: "a", Active: 1}, {Group: "b", Waiting: 2}}},
		{name: "the default applies to groups without their own", limits: map[string]int{"": 3, "a": 1},
			counts: map[string]rdb.GroupCount{"a": {Waiting: 5, Active: 1}, "b": {Active: 3}},
			want: []GroupStat{{Group: "", Limit: 3}, {Group: "a", Limit: 1, Waiting: 5, Active: 1},
				{Group: "b", Limit: 3, Active: 3}}},
		{name: "a group with a limit and no jobs is a row", limits: map[string]int{"idle": 2},
			want: []GroupStat{{Group: "idle", Limit: 2}}},
		{name: "the default is the first row, counting no job", limits: map[string]int{"": 4}, want: []GroupStat{{Group: "", Limit: 4}}},
		{name: "jobs of the group \"\" (written by hand) belong to no group", limits: map[string]int{"": 4},
			counts: map[string]rdb.GroupCount{"": {Waiting: 2}}, want: []GroupStat{{Group: "", Limit: 4}}},
		{name: "rates: the default's, a group's own, a group with a rate alone is a row",
			limits: map[string]int{"a": 1},
			rates:  map[string]GroupRate{"": {Starts: 10, Per: time.Minute}, "b": {Starts: 2, Per: time.Second}},
			counts: map[string]rdb.GroupCount{"a": {Waiting: 1}},
			want: []GroupStat{{Group: "", Rate: GroupRate{Starts: 10, Per: time.Minute}},
				{Group: "a", Limit: 1, Rate: GroupRate{Starts: 10, Per: time.Minute}, Waiting: 1},
				{Group: "b", Rate: GroupRate{Starts: 2, Per: time.Second}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, groupStats(tc.limits, tc.rates, tc.counts))
		})
	}
}
