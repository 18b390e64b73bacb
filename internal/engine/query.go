package engine

import (
	"context"
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// missingError reports ids that are not in the table.
func missingError(ids []string) error {
	return fmt.Errorf("%w: %v (nothing was changed)", job.ErrNotFound, ids)
}

// beginWithIDs checks ids (see parseIDs) and then begins a call (see begin).
func (q *Queue) beginWithIDs(ctx context.Context, ids []string) (checked []string, end func(), err error) {
	if checked, err = parseIDs(ids); err != nil {
		return nil, nil, err
	}
	if end, err = q.begin(ctx); err != nil {
		return nil, nil, err
	}
	return checked, end, nil
}

// parseIDs checks a list of job ids and drops repeats, keeping the first.
func parseIDs(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, ErrNoIDs
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !job.ValidID(id) {
			return nil, fmt.Errorf("%w (got %s)", job.ErrInvalidID, errtext.Key(id))
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}
