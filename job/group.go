package job

import (
	"fmt"
	"unicode/utf8"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// MaxGroupLen is the longest group key SetGroup takes, in bytes: the key names a document
// of the table's side tables, whose ids RethinkDB bounds.
const MaxGroupLen = 100

// ErrInvalidGroup is wrapped by the error of SetGroup given an empty key, one longer than
// MaxGroupLen bytes, or one that is not UTF-8; it wraps ErrInvalid.
var ErrInvalidGroup = fmt.Errorf("%w group: want a non-empty UTF-8 key of at most %d bytes", ErrInvalid, MaxGroupLen)

// SetGroup puts the job in a group (a customer, a tenant, an account): at most the
// group's limit of its jobs run at once across every worker of the table (see
// Queue.SetGroupLimit; a group without a limit of its own takes the default one, set
// for group "", and without either has none). The running jobs hold their group's slots
// until their outcome is written, or their lease ends (a worker that died), never less.
//
// The group is stored in the extra field "rjqGroup". A Node.js worker knows nothing of
// it: it runs such jobs as any other, outside the limit.
func (j *Job) SetGroup(key string) *Job {
	if !validKey(key, MaxGroupLen) {
		return j.fail(fmt.Errorf("%w (got %q)", ErrInvalidGroup, key))
	}
	j.setField(docfmt.Group, key)
	return j
}

// Group returns the group SetGroup set, or "" for a job without one.
func (j *Job) Group() string {
	g, _ := j.Fields[docfmt.Group].(string)
	return g
}

// validKey reports whether key is a group's or a sequence's: not empty, at most limit
// bytes, UTF-8.
func validKey(key string, limit int) bool {
	return key != "" && len(key) <= limit && utf8.ValidString(key)
}
