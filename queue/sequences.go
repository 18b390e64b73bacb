package queue

import (
	"cmp"
	"context"
	"slices"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// SequenceStat is what Sequences reports of one sequence of jobs (job.SetSequence).
type SequenceStat struct {
	Sequence string
	// Waiting, Active and Failed count its unfinished jobs of each status (Failed: failed
	// and to be retried).
	Waiting, Active, Failed int
	// Head is the id of the job that holds the sequence: the first of it in add order,
	// which runs now (Active), waits out its retry delay (Failed), or runs next.
	Head string
	// HeadStatus is Head's status as read.
	HeadStatus job.Status
}

// Sequences returns, sorted by key, each sequence that has unfinished jobs: how many of
// them wait, run and wait for a retry, and which job holds the sequence. It reads the
// key, id and status of the sequences' unfinished jobs through the table's index of
// sequences, at most 20,000 of them: partial is true when there were more, and the counts
// are then of those read (the sequences past them are left out). It reads no finished
// job, and no job outside a sequence. A table where no job of a sequence was ever added
// has none. Just after the first job of a sequence is added, while that index is being
// built, it reads the unfinished jobs through the status index instead (at most 20,000
// of them, with or without a sequence).
func (q *Queue) Sequences(ctx context.Context) (sequences []SequenceStat, partial bool, err error) {
	counts, partial, err := q.e.SequenceCounts(ctx)
	if err != nil {
		return nil, false, publicErr(err)
	}
	out := make([]SequenceStat, 0, len(counts))
	for key, c := range counts {
		out = append(out, SequenceStat{Sequence: key, Waiting: c.Waiting, Active: c.Active, Failed: c.Failed,
			Head: c.Head, HeadStatus: c.HeadStatus})
	}
	slices.SortFunc(out, func(a, b SequenceStat) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return out, partial, nil
}
