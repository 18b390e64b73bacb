package rdb

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// GroupCount is how many jobs of a group (job.SetGroup) wait (waiting, or failed and due
// for a retry) and run.
type GroupCount struct {
	Waiting, Active int
}

// GroupCounts counts the unfinished jobs of each group, reading at most most of the
// waiting, failed and active jobs (by the status index, only their group and status);
// partial is true when there were more, and the counts are of those read.
func (t *Table) GroupCounts(ctx context.Context, most int) (counts map[string]GroupCount, partial bool, err error) {
	live := t.Term().GetAllByIndex(IndexStatus, string(job.Waiting), string(job.Failed), string(job.Active)).
		Pluck(docfmt.Group, docfmt.Status).Limit(most + 1)
	term := r.Do(live.CoerceTo("array"), func(rows r.Term) any {
		return map[string]any{
			"read": rows.Count(),
			"groups": rows.Limit(most).Filter(func(row r.Term) r.Term {
				return row.Field(docfmt.Group).Default(nil).TypeOf().Eq("STRING")
			}).Group(func(row r.Term) any {
				return []any{row.Field(docfmt.Group), row.Field(docfmt.Status).Default(nil).Eq(string(job.Active))}
			}).Count().Ungroup(),
		}
	})
	var got struct {
		Read   int `rethinkdb:"read"`
		Groups []struct {
			Group     []any `rethinkdb:"group"`
			Reduction int   `rethinkdb:"reduction"`
		} `rethinkdb:"groups"`
	}
	if err := t.ReadOne(ctx, term, &got); err != nil {
		return nil, false, fmt.Errorf("queue %s: count the jobs of groups: %w", t.Name, err)
	}
	counts = make(map[string]GroupCount)
	for _, g := range got.Groups {
		if len(g.Group) != 2 {
			continue
		}
		name, _ := g.Group[0].(string)
		active, _ := g.Group[1].(bool)
		c := counts[name]
		if active {
			c.Active += g.Reduction
		} else {
			c.Waiting += g.Reduction
		}
		counts[name] = c
	}
	return counts, got.Read > most, nil
}
