package listing

import (
	"context"
	"errors"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Related is a parent or child of a job of a workflow, as rjq show and the dashboard list
// it; Status "removed" for a parent no longer in the table.
type Related struct {
	ID     string     `json:"id"`
	Name   string     `json:"name,omitempty"`
	Status job.Status `json:"status"`
}

// Kin reads a job's parents and children: queue.Queue does.
type Kin interface {
	GetJob(ctx context.Context, ids ...string) ([]*job.Job, error)
	Children(ctx context.Context, id string) ([]*job.Job, error)
}

// Workflow returns j's parents, in the order of its DependsOn, and its children.
func Workflow(ctx context.Context, k Kin, j *job.Job) (parents, children []Related, err error) {
	if ids := j.DependsOn(); len(ids) > 0 {
		found, err := k.GetJob(ctx, ids...)
		if err != nil && !errors.Is(err, job.ErrNotFound) {
			return nil, nil, err
		}
		byID := make(map[string]*job.Job, len(found))
		for _, p := range found {
			byID[p.ID] = p
		}
		for _, id := range ids {
			if p, ok := byID[id]; ok {
				parents = append(parents, Related{ID: id, Name: p.Name, Status: p.Status})
			} else {
				parents = append(parents, Related{ID: id, Status: "removed"})
			}
		}
	}
	kids, err := k.Children(ctx, j.ID)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range kids {
		children = append(children, Related{ID: c.ID, Name: c.Name, Status: c.Status})
	}
	return parents, children, nil
}
