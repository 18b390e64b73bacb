package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// limitSet reads the group limits of the limits table: a limit of 0 (written before
// SetGroupLimit removed it) is no limit of its own, so that the group goes by the default.
func TestLimitSetReadsGroupLimits(t *testing.T) {
	set := limitSet([]map[string]any{
		{"id": GroupLimitPrefix, "group": "", "running": 2.0},
		{"id": GroupLimitPrefix + "big", "group": "big", "running": 5.0},
		{"id": GroupLimitPrefix + "zero", "group": "zero", "running": 0.0},
		{"id": GroupLimitPrefix + "bad", "group": "bad", "running": -1.0},
		{"id": "mail", "starts": 1.0, "per": 1000.0},
	})
	assert.Equal(t, map[string]int{"": 2, "big": 5}, set.Groups)
	assert.Len(t, set.Bad, 1)
	assert.Len(t, set.Names, 1)
}
