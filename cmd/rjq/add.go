package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// cmdAdd adds one job by hand: a retry of something that never got queued, a test run of
// a handler. The payload is JSON, stored as the library would store it.
func cmdAdd(ctx context.Context, c config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", "", "the payload, as JSON (default: none)")
	priority := fs.String("priority", "normal", "lowest, low, normal, medium, high or highest")
	opts := addOptions(fs)
	dependsOn := fs.String("depends-on", "", "the ids of its parents, comma-separated: it runs once each has completed")
	if err := fs.Parse(args); err != nil {
		return usagef("add: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("add takes flags only, got %q", fs.Args())
	}
	var payload any
	if *data != "" {
		if err := json.Unmarshal([]byte(*data), &payload); err != nil {
			return usagef("add --data: not JSON: %v", err)
		}
	}
	p, err := job.ParsePriority(*priority)
	if err != nil {
		return usagef("add --priority: %v", err)
	}
	if opts.parents, err = parentIDs(*dependsOn); err != nil {
		return err
	}
	q, done, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	j := q.CreateJob(payload).SetPriority(p)
	opts.apply(j)
	if err := j.Err(); err != nil {
		return usagef("add: %v", err)
	}
	added, err := q.AddJob(ctx, j)
	if errors.Is(err, job.ErrInvalid) {
		return usagef("add: %v", err)
	}
	if err != nil {
		return err
	}
	if c.json {
		return json.NewEncoder(out).Encode(map[string]any{"id": added[0].ID, "status": added[0].Status, "duplicate": added[0].Duplicate()})
	}
	if added[0].Duplicate() {
		fmt.Fprintf(out, "%s %s (already there for the unique key: nothing added)\n", added[0].ID, added[0].Status)
		return nil
	}
	fmt.Fprintf(out, "%s %s\n", added[0].ID, added[0].Status)
	return nil
}

// parentIDs reads --depends-on: job ids separated by commas (spaces around them allowed).
func parentIDs(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var ids []string
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if !job.ValidID(id) {
			return nil, usagef("add --depends-on: %q is not a job id (want UUIDs separated by commas)", id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// addFlags are the flags of rjq add that set an option of the job, unset at their zero
// (retries: below 0).
type addFlags struct {
	name, unique, group, sequence                 *string
	delay, timeout, uniqueFor, debounce, deadline *time.Duration
	retries                                       *int
	parents                                       []string
}

// addOptions defines the flags of addFlags on fs.
func addOptions(fs *flag.FlagSet) *addFlags {
	return &addFlags{
		name:      fs.String("name", "", "the job's name (default: its id)"),
		delay:     fs.Duration("delay", 0, "run it no sooner than this from now"),
		timeout:   fs.Duration("timeout", 0, "how long one run may take (default: the library's)"),
		retries:   fs.Int("retry-max", -1, "how many times a failed run is retried (default: the library's)"),
		unique:    fs.String("unique", "", "a unique key: no job is added while another with the key is unfinished"),
		uniqueFor: fs.Duration("unique-for", 0, "with --unique: a finished job of the key also stands for this long after it finished"),
		debounce:  fs.Duration("debounce", 0, "with --unique: replace the key's waiting job and start this long from now"),
		deadline:  fs.Duration("deadline", 0, "cancel the job if it has not started this long from now"),
		group:     fs.String("group", "", "the job's group, whose running limit it shares (see rjq limits)"),
		sequence:  fs.String("sequence", "", "the job's sequence: it runs after the sequence's earlier jobs, one at a time"),
	}
}

// apply sets the options given on j; an invalid one is reported by j.Err.
func (a *addFlags) apply(j *job.Job) {
	if *a.retries >= 0 {
		j.SetRetryMax(*a.retries)
	}
	if *a.name != "" {
		j.SetName(*a.name)
	}
	if *a.timeout != 0 {
		j.SetTimeout(*a.timeout)
	}
	if *a.delay > 0 {
		j.SetDateEnable(time.Now().Add(*a.delay))
	}
	if *a.unique != "" {
		j.SetUniqueKey(*a.unique)
	}
	if *a.uniqueFor != 0 {
		j.SetUniqueFor(*a.uniqueFor)
	}
	if *a.debounce != 0 {
		j.SetDebounce(*a.debounce)
	}
	if *a.deadline != 0 {
		j.SetDeadline(time.Now().Add(*a.deadline))
	}
	if *a.group != "" {
		j.SetGroup(*a.group)
	}
	if *a.sequence != "" {
		j.SetSequence(*a.sequence)
	}
	if len(a.parents) > 0 {
		j.SetDependsOn(a.parents...)
	}
}
