package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// With -features, the trigger's jobs use the queue's features, by document (featuresOf):
// every job is in a group whose running limit is groupLimits'; some documents' jobs run
// in a sequence keyed by the document, some have the document's unique key, and the
// handler of some adds a child job (shipJobName) that depends on the order's job.

// shipJobName is the name of the child jobs.
const shipJobName = "ship"

// groupLimits are the running limits of the groups of the trigger's jobs ("": the
// default, that of g2).
var groupLimits = map[string]int{"g0": 2, "g1": 3, "": 6}

// orderFeatures is what -features gives the jobs of one document.
type orderFeatures struct {
	group    string
	sequence bool // its jobs run one at a time, in add order (SetSequence by document)
	unique   bool // its job has the document's unique key
	child    bool // its job's handler adds a child that depends on it
}

// featuresOf is the features of the jobs of the document doc ("o" and its number):
// 10% in g0 (limit 2), 30% in g1 (limit 3), the rest in g2 (the default limit, 6); one
// document in 7 with a unique key; of the others, the even ones in a sequence and one in
// 5 with a child.
func featuresOf(doc string) orderFeatures {
	n, _ := strconv.Atoi(strings.TrimPrefix(doc, "o"))
	f := orderFeatures{group: "g2", unique: n%7 == 3}
	switch n % 10 {
	case 0:
		f.group = "g0"
	case 1, 2, 3:
		f.group = "g1"
	}
	f.sequence = !f.unique && n%2 == 0
	f.child = !f.unique && n%5 == 1
	return f
}

// sequenceKey and uniqueKey are the keys of a document's jobs.
func sequenceKey(doc string) string { return "order-" + doc }
func uniqueKey(doc string) string   { return "order-" + doc }

// withFeatures gives j, the job of a version of doc, its document's features.
func withFeatures(j *job.Job, doc string) *job.Job {
	f := featuresOf(doc)
	j.SetGroup(f.group)
	if f.sequence {
		j.SetSequence(sequenceKey(doc))
	}
	if f.unique {
		j.SetUniqueKey(uniqueKey(doc))
	}
	return j
}

// childSpace is the namespace of the ids of the child jobs: one per parent.
var childSpace = uuid.MustParse("0d7c2b4e-93a1-4f55-8c1e-5a9b7e3f2d10")

// addChild adds the child of the order's job parent (the version v of doc), unless it is
// there already (an earlier run of the parent added it): a job that waits for the
// parent to complete.
func addChild(ctx context.Context, q *queue.Queue, parent *job.Job, doc string, v int) error {
	c := q.CreateJob(map[string]any{"doc": doc, "v": v, "parent": parent.ID}).SetName(shipJobName).
		SetDependsOn(parent.ID).SetRetryMax(10).SetRetryDelay(time.Second)
	c.ID = uuid.NewSHA1(childSpace, []byte(parent.ID)).String()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := q.AddJob(actx, c)
	if err != nil && !errors.Is(err, job.ErrExists) {
		return fmt.Errorf("add the child of job %s: %w", parent.ID, err)
	}
	return nil
}

// setGroupLimits sets groupLimits.
func setGroupLimits(ctx context.Context, q *queue.Queue) error {
	for g, n := range groupLimits {
		if err := q.SetGroupLimit(ctx, g, n); err != nil {
			return err
		}
	}
	return nil
}
