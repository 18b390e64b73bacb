package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlobalFlagsMayComeBeforeOrAfterTheCommand(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		queue, db string
		json      bool
		rest      []string
	}{
		{"before", []string{"--queue", "mail", "summary"}, "mail", "rjqJobQueue", false, []string{"summary"}},
		{"after", []string{"summary", "--queue", "mail"}, "mail", "rjqJobQueue", false, []string{"summary"}},
		{"after, with =", []string{"summary", "--queue=mail", "-db=jobs"}, "mail", "jobs", false, []string{"summary"}},
		{"a bool after", []string{"list", "--json", "--status", "failed"}, "rjqJobList", "rjqJobQueue", true, []string{"list", "--status", "failed"}},
		{"mixed with the command's own", []string{"--db", "jobs", "cancel", "ID", "--queue", "mail", "--reason", "r"}, "mail", "jobs", false,
			[]string{"cancel", "ID", "--reason", "r"}},
		{"after --, the command's", []string{"show", "--", "--queue"}, "rjqJobList", "rjqJobQueue", false, []string{"show", "--", "--queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rest, err := parseGlobal(tc.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.queue, c.queue)
			assert.Equal(t, tc.db, c.db)
			assert.Equal(t, tc.json, c.json)
			assert.Equal(t, tc.rest, rest)
		})
	}
	_, _, err := parseGlobal([]string{"summary", "--queue"}, io.Discard)
	assert.ErrorContains(t, err, "flag needs an argument", "a global flag after the command still needs its value")
}
