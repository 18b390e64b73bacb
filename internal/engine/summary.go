package engine

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// Summary is queue.Queue.Summary, whose doc says what it does.
func (q *Queue) Summary(ctx context.Context) (rdb.Counts, error) {
	end, err := q.begin(ctx)
	if err != nil {
		return rdb.Counts{}, err
	}
	defer end()
	c, err := q.db.Counts(ctx, q.exactBelow)
	if err != nil {
		return rdb.Counts{}, fmt.Errorf("queue %s: summary: %w", q.cfg.Name, err)
	}
	return c, nil
}

// SetExactBelow sets the table size below which Summary counts every job, for tests.
func (q *Queue) SetExactBelow(n int) { q.exactBelow = n }
