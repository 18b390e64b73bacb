package rdb

import "context"

// SequenceCountsByStatus is SequenceCounts as it reads while the index of sequences is
// being built.
func (t *Table) SequenceCountsByStatus(ctx context.Context, most int) (map[string]SequenceCount, bool, error) {
	rows, partial, err := t.sequenceRowsByStatus(ctx, most)
	return countSequences(rows), partial, err
}
