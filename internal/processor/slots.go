package processor

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Running caps: a job of a name with Limiting.Running, or of a group with a running
// limit, starts only once its run holds a slot of each (rdb.TakeSlots), taken before its
// claim; a claim that does not win the job gives the slot back at once, a run gives it
// back with its outcome. A key found full holds its jobs back until a slot is given back
// here, or slotRecheck has passed (a slot given back by another process).

// slotRecheck is how long the jobs of a full key wait before a claim tries its slots
// again, unless a run of this processor gives one back first.
const slotRecheck = 250 * time.Millisecond

// slotKeys are the slot keys that a run of j must hold, with their limits.
func (l *limiter) slotKeys(j *job.Job) (keys []string, limits []int) {
	if n := l.limits[j.Name].Running; n > 0 {
		keys, limits = append(keys, rdb.NameSlot(j.Name)), append(limits, n)
	}
	if g := j.Group(); g != "" {
		n, ok := l.groups[g]
		if !ok {
			n = l.groups[""]
		}
		if n > 0 {
			keys, limits = append(keys, rdb.GroupSlot(g)), append(limits, n)
		}
	}
	if s := j.Sequence(); s != "" {
		keys, limits = append(keys, rdb.SequenceSlot(s)), append(limits, 1)
	}
	return keys, limits
}

// firstOfSequences keeps the jobs that belong to no sequence and those that come first
// in theirs; a sequence whose job came second is held back (fullUntil), like a full key,
// until a run of it ends or slotRecheck has passed. Each job's turn is told by the job
// AddJob stamped as ahead of it (turns), and, where that cannot tell, by the first job of
// its key in the index (rdb.SequenceHeads). When neither can be read, the jobs of
// sequences wait; on a table without the index of sequences (made by AddJob; a table
// whose jobs were written otherwise) it is made.
func (p *producer) firstOfSequences(ctx context.Context, jobs []*job.Job, now time.Time) []*job.Job {
	if !slices.ContainsFunc(jobs, func(j *job.Job) bool { return j.Sequence() != "" }) {
		return jobs
	}
	turn, unknown, err := p.turns(ctx, jobs)
	var heads map[string]rdb.Candidate
	if err == nil && len(unknown) > 0 {
		heads, err = p.p.cfg.Store.SequenceHeads(ctx, unknown)
	}
	switch {
	case errors.Is(err, rdb.ErrNoSequenceIndex):
		if !p.seqIndexAsked {
			p.seqIndexAsked = true
			p.p.cfg.Log.Info("the jobs of sequences wait until the table's index of sequences is built", "index", rdb.IndexSequence)
			if err := p.p.cfg.Store.EnsureSequenceIndex(ctx); err != nil {
				p.p.cfg.Log.Warn("creating the index of sequences failed: the jobs of sequences wait until it exists", "index", rdb.IndexSequence, "err", err)
			}
		}
	case err != nil:
		p.p.cfg.Log.Warn("reading the first job of each sequence failed; the jobs of sequences wait", "err", err)
	}
	kept := make([]*job.Job, 0, len(jobs))
	taken := make(map[string]bool) // keys whose first job this claim takes
	inClaim := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		inClaim[j.ID] = true
	}
	skipped := p.skipList(now)
	l := &p.lim
	l.mu.Lock() // over fullUntil, which slotsFreed reads
	defer l.mu.Unlock()
	if l.fullUntil == nil {
		l.fullUntil = make(map[string]time.Time)
	}
	for _, j := range jobs {
		s := j.Sequence()
		if s == "" {
			kept = append(kept, j)
			continue
		}
		if err == nil && !taken[s] {
			switch turn[j.ID] {
			case rdb.TurnFirst:
				taken[s] = true
				kept = append(kept, j)
				continue
			case rdb.TurnWaits:
				l.fullUntil[rdb.SequenceSlot(s)] = now.Add(slotRecheck)
				continue
			}
		}
		head, ok := heads[s]
		switch {
		case err == nil && !ok && turn[j.ID] == rdb.TurnUnknown:
			// A job that is not in the index (its place missing: written by hand) has no
			// turn to wait for; it still runs only while it holds its sequence's slot.
			kept = append(kept, j)
			continue
		case ok && head.Job != nil && head.Job.ID == j.ID && !taken[s]:
			taken[s] = true
			kept = append(kept, j)
			continue
		case ok && head.Job != nil && !taken[s] && !inClaim[head.Job.ID] && dueNow(head.Job, now) && !skippedID(skipped, head.Job.ID):
			// Read in claim order, a sequence's later job may come before its first (jobs
			// of one millisecond are ordered by id): the first, waiting and due, is
			// claimed in its place.
			taken[s] = true
			inClaim[head.Job.ID] = true
			kept = append(kept, head.Job)
			continue
		}
		l.fullUntil[rdb.SequenceSlot(s)] = now.Add(slotRecheck)
	}
	return kept
}

// turns tells the turn of each job of a sequence among jobs from the job ahead of it
// (rdb.TurnOf), read by id in one query; unknown lists the keys of the jobs it cannot
// tell, for the index to.
func (p *producer) turns(ctx context.Context, jobs []*job.Job) (turn map[string]rdb.Turn, unknown []string, err error) {
	var prevs []string
	for _, j := range jobs {
		if prev, ok := rdb.SequencePrev(j); ok && prev != "" && j.Sequence() != "" {
			prevs = append(prevs, prev)
		}
	}
	var ahead map[string]rdb.SequenceJob
	if len(prevs) > 0 {
		if ahead, err = p.p.cfg.Store.ReadSequenceJobs(ctx, prevs); err != nil {
			return nil, nil, err
		}
	}
	turn = make(map[string]rdb.Turn)
	seen := make(map[string]bool)
	for _, j := range jobs {
		s := j.Sequence()
		if s == "" {
			continue
		}
		prev, _ := rdb.SequencePrev(j)
		got, found := ahead[prev]
		t := rdb.TurnOf(j, got, found)
		turn[j.ID] = t
		if t == rdb.TurnUnknown && !seen[s] {
			seen[s] = true
			unknown = append(unknown, s)
		}
	}
	return turn, unknown, nil
}

// skippedID reports whether job id is among the ids a claim leaves out (of any type: a
// document written by hand may have any id).
func skippedID(skipped []any, id string) bool {
	for _, v := range skipped {
		if s, ok := v.(string); ok && s == id {
			return true
		}
	}
	return false
}

// dueNow reports whether j is waiting or failed and due at now.
func dueNow(j *job.Job, now time.Time) bool {
	return (j.Status == job.Waiting || j.Status == job.Failed) && !j.DateEnable.After(now)
}

// takeSlots takes the running slots of the jobs that need them, and keeps, in order, the
// jobs that need none and those whose run got every slot it needs; it gives back the
// slots of a job that got some but not all. slots maps each kept job that holds slots to
// their keys. A key that had no room for a job holds its jobs back (fullUntil).
func (p *producer) takeSlots(ctx context.Context, jobs []*job.Job, now time.Time) (kept []*job.Job, slots map[string][]string) {
	l := &p.lim
	jobs = p.firstOfSequences(ctx, jobs, now)
	if len(l.groups) == 0 && !anyRunning(l.limits) && !slices.ContainsFunc(jobs, func(j *job.Job) bool { return j.Sequence() != "" }) {
		return jobs, nil
	}
	need := make(map[string][]string)
	var order []string
	takes := make(map[string]*rdb.SlotTake)
	for _, j := range jobs {
		keys, limits := l.slotKeys(j)
		if len(keys) == 0 {
			continue
		}
		need[j.ID] = keys
		for i, key := range keys {
			t, ok := takes[key]
			if !ok {
				t = &rdb.SlotTake{Key: key, Limit: limits[i]}
				takes[key] = t
				order = append(order, key)
			}
			t.Want = append(t.Want, p.p.holder(j.ID, j.ProcessCount+1))
		}
	}
	if len(takes) == 0 {
		return jobs, nil
	}
	list := make([]rdb.SlotTake, len(order))
	for i, key := range order {
		list[i] = *takes[key]
	}
	got, err := p.p.cfg.Store.TakeSlots(ctx, list)
	if err == nil {
		// A key without room for every run asked for may hold slots of runs that are over
		// (a worker that died): drop those, and take again.
		var again []rdb.SlotTake
		full := make(rdb.Slots)
		for _, t := range list {
			for _, h := range t.Want {
				if !got.Holds(t.Key, h) {
					full[t.Key] = got[t.Key]
					break
				}
			}
		}
		if len(full) > 0 {
			stale, serr := p.p.cfg.Store.Stale(ctx, full, now)
			if serr != nil {
				p.p.cfg.Log.Warn("reading the runs that hold running slots failed", "err", serr)
			}
			for _, t := range list {
				if ids := stale[t.Key]; len(ids) > 0 {
					t.Stale = ids
					again = append(again, t)
				}
			}
		}
		if len(again) > 0 {
			more, aerr := p.p.cfg.Store.TakeSlots(ctx, again)
			if aerr == nil {
				for key, held := range more {
					got[key] = held
				}
			}
		}
	}
	if err != nil {
		p.p.cfg.Log.Warn("taking running slots failed; the jobs that need them wait", "err", err)
		got = rdb.Slots{}
	}
	slots = make(map[string][]string)
	giveBack := make(map[string][]rdb.Holder)
	l.mu.Lock() // over fullUntil, which slotsFreed reads
	if l.fullUntil == nil {
		l.fullUntil = make(map[string]time.Time)
	}
	for _, j := range jobs {
		keys, ok := need[j.ID]
		if !ok {
			kept = append(kept, j)
			continue
		}
		h := p.p.holder(j.ID, j.ProcessCount+1)
		var have []string
		for _, key := range keys {
			if got.Holds(key, h) {
				have = append(have, key)
			} else {
				l.fullUntil[key] = now.Add(slotRecheck)
			}
		}
		if len(have) == len(keys) {
			kept = append(kept, j)
			slots[j.ID] = keys
			continue
		}
		for _, key := range have {
			giveBack[key] = append(giveBack[key], h)
		}
	}
	l.mu.Unlock()
	p.releaseSlots(ctx, giveBack)
	return kept, slots
}

func anyRunning(limits map[string]Limiting) bool {
	for _, l := range limits {
		if l.Running > 0 {
			return true
		}
	}
	return false
}

// settleSlots gives back the slots of the jobs a claim did not win, and records those of
// the runs it won, for their outcome to give back.
func (p *producer) settleSlots(ctx context.Context, jobs []*job.Job, slots map[string][]string, won map[string]bool) {
	if len(slots) == 0 {
		return
	}
	giveBack := make(map[string][]rdb.Holder)
	pr := p.p
	pr.slotMu.Lock()
	for _, j := range jobs {
		keys, ok := slots[j.ID]
		if !ok {
			continue
		}
		h := p.p.holder(j.ID, j.ProcessCount+1)
		if won[j.ID] {
			if pr.slotRuns == nil {
				pr.slotRuns = make(map[rdb.RunKey][]string)
			}
			pr.slotRuns[rdb.RunKey{ID: h.ID, ProcessCount: h.PC}] = keys
			continue
		}
		for _, key := range keys {
			giveBack[key] = append(giveBack[key], h)
		}
	}
	pr.slotMu.Unlock()
	p.releaseSlots(ctx, giveBack)
}

// releaseSlots gives slots back; a failure only leaves them to be found stale.
func (p *producer) releaseSlots(ctx context.Context, runs map[string][]rdb.Holder) {
	if len(runs) == 0 {
		return
	}
	if err := p.p.cfg.Store.ReleaseSlots(ctx, runs); err != nil {
		p.p.cfg.Log.Info("giving running slots back failed; they are taken back once found stale", "err", err)
	}
}

// runsEnded gives back the slots of runs whose outcome was written (or whose claim was
// lost), and lets the jobs of their keys be claimed again here at once.
func (p *Processor) runsEnded(ctx context.Context, runs []rdb.RunKey) {
	giveBack := make(map[string][]rdb.Holder)
	p.slotMu.Lock()
	for _, k := range runs {
		keys, ok := p.slotRuns[k]
		if !ok {
			continue
		}
		delete(p.slotRuns, k)
		for _, key := range keys {
			giveBack[key] = append(giveBack[key], p.holder(k.ID, k.ProcessCount))
		}
	}
	p.slotMu.Unlock()
	if len(giveBack) == 0 {
		return
	}
	if err := p.cfg.Store.ReleaseSlots(ctx, giveBack); err != nil {
		p.cfg.Log.Info("giving running slots back failed; they are taken back once found stale", "err", err)
	}
	p.prod.slotsFreed(mapKeys(giveBack))
}

// slotsFreed lets the jobs of keys whose slots were given back be claimed at once, when
// they were held back: the next round reads the table for them. (A key that was not
// full held nothing back; waking a read for it would only shrink the claims.)
func (p *producer) slotsFreed(keys []string) {
	l := &p.lim
	l.mu.Lock()
	held := false
	for _, key := range keys {
		if _, ok := l.fullUntil[key]; ok {
			l.freed = append(l.freed, key)
			held = true
		}
	}
	l.mu.Unlock()
	if held {
		p.wake(true)
	}
}

// RunEndedElsewhere tells the processor that a run of a job named name, of group group
// and sequence seq ("" for none), ended in another queue, or that a job of sequence seq
// finished or was removed (its changefeed saw it): the slots it held may be free, or the
// next job of its sequence may run, and the jobs held back for them are tried again at
// once rather than after slotRecheck.
//
// Every worker hears of every run that ends: without a key held back it does nothing
// more than look at an empty map.
func (p *Processor) RunEndedElsewhere(name, group, seq string) {
	l := &p.prod.lim
	l.mu.Lock()
	none := len(l.fullUntil) == 0
	l.mu.Unlock()
	if none {
		return
	}
	keys := []string{rdb.NameSlot(name)}
	if group != "" {
		keys = append(keys, rdb.GroupSlot(group))
	}
	if seq != "" {
		keys = append(keys, rdb.SequenceSlot(seq))
	}
	p.prod.slotsFreed(keys)
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// holder is the run of job id whose claim sets processCount pc, as this processor's
// queue holds its slots.
func (p *Processor) holder(id string, pc int) rdb.Holder {
	return rdb.Holder{ID: id, PC: pc, Queue: p.cfg.QueueID}
}
