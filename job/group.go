package job

import (
	"fmt"
	"unicode/utf8"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
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
// Groups take turns: among jobs of one priority that are due, a group that starts to add
// while another has a backlog does not wait behind that backlog. AddJob gives the new
// jobs of a group that are due at once consecutive turns of their group and priority,
// from the later of the group's last turn and the job a claim takes next, 20 turns to a
// millisecond of dateEnable (the job's DateEnable, as AddJob returns it, is its turn's
// millisecond): two groups' jobs so alternate in the claim order, each group's in the
// order it added them. A burst of one group is spread over the milliseconds that follow
// (a burst of 20,000 over one second: that group alone starts at most 20,000 jobs a
// second while it is ahead of the clock); a group's next add never waits more than 10 s
// for turns its earlier jobs took. Jobs without a group, delayed (SetDateEnable in the
// future) or debounced keep their time. The turns are kept in the table
// "<queue>_slots" (a Queue Master's review removes those the claims have passed); taking
// them costs an add of such jobs a read and a write.
//
// The group is stored in the extra field "rjqGroup". A Node.js worker knows nothing of
// it: it runs such jobs as any other, outside the limit, and claims them in the same
// turns (it orders by dateEnable too); a job a Node.js producer adds with a group takes
// no turn and goes by its time.
func (j *Job) SetGroup(key string) *Job {
	if !validKey(key, MaxGroupLen) {
		return j.fail(fmt.Errorf("%w (got %s)", ErrInvalidGroup, errtext.Key(key)))
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
