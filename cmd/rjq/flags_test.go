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

// help prints the usage on stdout and succeeds: all of it, or one command's.
func TestHelpPrintsTheUsage(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		args      []string
		says, not string
	}{
		{[]string{"help"}, "commands:", ""},
		{[]string{"help", "list"}, "--sequence", "reanimate"},
		{[]string{"help", "resume"}, "pause | resume", "list"},
		{[]string{"list", "--help"}, "--group", "reanimate"},
		{[]string{"add", "-h"}, "--depends-on", "reanimate"},
	} {
		res := rjq(t, bin, tc.args...)
		assert.Equal(t, exitOK, res.code, "%v: %s", tc.args, res.stderr)
		assert.Contains(t, res.stdout, tc.says, "%v", tc.args)
		if tc.not != "" {
			assert.NotContains(t, res.stdout, tc.not, "%v: one command's lines only", tc.args)
		}
		assert.NotContains(t, res.stderr, "unknown command", "%v", tc.args)
	}
	res := rjq(t, bin, "help", "frobnicate")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, `unknown command "frobnicate"`)
}
