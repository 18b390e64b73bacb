package engine

import (
	"context"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// maxSequenceRead bounds the unfinished jobs of sequences SequenceCounts reads, as
// maxGroupRead does for groups.
const maxSequenceRead = maxGroupRead

// SequenceCounts is queue.Queue.Sequences' read of the jobs of each sequence
// (rdb.Table.SequenceCounts).
func (q *Queue) SequenceCounts(ctx context.Context) (map[string]rdb.SequenceCount, bool, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer end()
	return q.db.SequenceCounts(ctx, maxSequenceRead)
}
