package job

import (
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// MaxSequenceLen is the longest sequence key SetSequence takes, in bytes, as for groups.
const MaxSequenceLen = MaxGroupLen

// ErrInvalidSequence is wrapped by the error of SetSequence given an empty key, one
// longer than MaxSequenceLen bytes, or one that is not UTF-8; it wraps ErrInvalid.
var ErrInvalidSequence = fmt.Errorf("%w sequence: want a non-empty UTF-8 key of at most %d bytes", ErrInvalid, MaxSequenceLen)

// SetSequence puts the job in a sequence (an account's ledger, a document's edits): the
// jobs of a key run one at a time, across every worker of the table, in the order they
// were added, and different keys run in parallel.
//
// A job holds its sequence from its add until it is finished: a job that failed and will
// be retried holds it until it completes, is terminated or is cancelled (by CancelJob,
// RemoveJob or its start deadline), and the job behind it waits meanwhile. A running job
// whose worker died holds it until its lease ends, never less. Order is the order of
// AddJob calls (the jobs of one call in the order given); jobs of one key added at
// once by processes whose clocks differ are ordered by those clocks. A job reanimated
// after a later job of its key ran runs after the one running now.
//
// The key is stored in the extra field "rjqSequence", the job's place in
// "rjqSequenceAt", and the id of the job of the key that was last when it was added in
// "rjqSequencePrev" ("" for none; AddJob writes both, over any value the caller put in
// Fields): a worker reads that job by id to tell whether this one's turn has come, and
// reads the table's index of sequences only when it cannot tell. AddJob also places each
// job that is due at least a millisecond of dateEnable after the job of its key ahead of
// it that waits (10 s at most after the add; a delayed or debounced job keeps its time):
// the jobs of one key so never share a millisecond, and the claim order holds the next
// job of every key before the one after it of any, where workers would read them and
// pass them over (a key runs one job at a time: the millisecond costs it nothing). A
// Node.js worker knows nothing of them: it runs such jobs as any other, out of order and
// beside the running one.
func (j *Job) SetSequence(key string) *Job {
	if !validKey(key, MaxSequenceLen) {
		return j.fail(fmt.Errorf("%w (got %s)", ErrInvalidSequence, errtext.Key(key)))
	}
	j.setField(docfmt.Sequence, key)
	return j
}

// Sequence returns the sequence SetSequence set, or "" for a job without one.
func (j *Job) Sequence() string {
	s, _ := j.Fields[docfmt.Sequence].(string)
	return s
}
