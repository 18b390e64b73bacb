package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// limitSet reads the group limits and rates of the limits table: a limit or a rate of 0
// (a limit of 0 written before SetGroupLimit removed it) is none of the group's own, so
// that the group goes by the default.
func TestLimitSetReadsGroupLimitsAndRates(t *testing.T) {
	set := limitSet([]map[string]any{
		{"id": GroupLimitPrefix + "", "running": 2.0},
		{"id": GroupLimitPrefix + "a", "running": 1.0, "starts": 10.0, "per": 60000.0},
		{"id": GroupLimitPrefix + "b", "starts": 5.0, "per": 1000.0},
		{"id": GroupLimitPrefix + "zero", "running": 0.0, "starts": 0.0, "per": 0.0},
		{"id": GroupLimitPrefix + "half", "starts": 5.0},
		{"id": GroupLimitPrefix + "neg", "running": -1.0},
		{"id": GroupLimitPrefix + "empty"},
		{"id": "mail", "starts": 3.0, "per": 1000.0},
	})
	assert.Equal(t, map[string]int{"": 2, "a": 1}, set.Groups)
	assert.Equal(t, map[string]GroupRate{"a": {Starts: 10, Per: 60000}, "b": {Starts: 5, Per: 1000}}, set.GroupRates)
	assert.Len(t, set.Bad, 3, "half a rate, a negative limit, a document with neither: %v", set.Bad)
	assert.Len(t, set.Names, 1)
}
