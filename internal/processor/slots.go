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

// slotNeed is a slot a run of a job must hold: its key, the key's limit, and for a
// rate, how long a start holds it (see rdb.GroupRateSlot).
type slotNeed struct {
	key    string
	limit  int
	expire time.Duration
}

// rateSlack is added to the span of a rate (see rdb.RateSlack).
const rateSlack = rdb.RateSlack

// slotNeeds are the slots that a run of j must hold.
func (l *limiter) slotNeeds(j *job.Job) []slotNeed {
	var needs []slotNeed
	if n := l.limits[j.Name].Running; n > 0 {
		needs = append(needs, slotNeed{key: rdb.NameSlot(j.Name), limit: n})
	}
	g := j.Group()
	if n := ofGroup(l.groups, g); g != "" && n > 0 {
		needs = append(needs, slotNeed{key: rdb.GroupSlot(g), limit: n})
	}
	if s := j.Sequence(); s != "" {
		needs = append(needs, slotNeed{key: rdb.SequenceSlot(s), limit: 1})
	}
	// A rate's start last: it is taken only for a run that holds every running slot.
	if rate := ofGroup(l.rates, g); g != "" && rate.Starts > 0 {
		needs = append(needs, slotNeed{key: rdb.GroupRateSlot(g), limit: rate.Starts, expire: rate.Per + rateSlack})
	}
	return needs
}

// ofGroup is group g's own value in m, else the default's (key "").
func ofGroup[V any](m map[string]V, g string) V {
	if v, ok := m[g]; ok {
		return v
	}
	return m[""]
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
	turn, heads, err := p.sequenceTurns(ctx, jobs)
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

// sequenceTurns tells the turn of each job of a sequence among jobs (turns), and the first
// job of each key whose turns it cannot tell, from the index of sequences. An error says
// that the jobs of sequences wait: it is logged here, and a missing index is made.
func (p *producer) sequenceTurns(ctx context.Context, jobs []*job.Job) (map[string]rdb.Turn, map[string]rdb.Candidate, error) {
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
	return turn, heads, err
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
	if len(l.groups) == 0 && len(l.rates) == 0 && !anyRunning(l.limits) && !slices.ContainsFunc(jobs, func(j *job.Job) bool { return j.Sequence() != "" }) {
		return jobs, nil
	}
	need, list := p.slotTakes(jobs)
	if len(list) == 0 {
		return jobs, nil
	}
	// Running slots first, then the starts of rates for the runs that hold theirs: a run
	// refused a running slot takes no start, which would hold its group back for the
	// rate's span while the rate has room.
	rates, running := rdb.SplitRates(list)
	got := p.takeWithStale(ctx, running, now)
	if rates = p.ratesFor(rates, jobs, need, got); len(rates) > 0 {
		more, err := p.p.cfg.Store.TakeSlots(ctx, rates)
		if err != nil {
			p.p.cfg.Log.Warn("taking the starts of group rates failed; the jobs that need them wait", "err", err)
		}
		for key, held := range more {
			got[key] = held
		}
	}
	return p.keepHolders(ctx, jobs, need, got, list, now)
}

// ratesFor is the takes of rates with only the runs of jobs that hold every other slot
// they need (got), in order; a take left with no run is dropped.
func (p *producer) ratesFor(rates []rdb.SlotTake, jobs []*job.Job, need map[string][]string, got rdb.Slots) []rdb.SlotTake {
	if len(rates) == 0 {
		return nil
	}
	holding := make(map[rdb.Holder]bool)
	for _, j := range jobs {
		pc, ok := j.ProcessCount+1, true
		for _, key := range need[j.ID] {
			ok = ok && (rdb.IsRateSlot(key) || got.Holds(key, p.p.holderFor(key, j.ID, pc)))
		}
		for _, key := range need[j.ID] {
			if ok && rdb.IsRateSlot(key) {
				holding[p.p.holderFor(key, j.ID, pc)] = true
			}
		}
	}
	var out []rdb.SlotTake
	for _, t := range rates {
		t.Want = slices.DeleteFunc(slices.Clone(t.Want), func(h rdb.Holder) bool { return !holding[h] })
		if len(t.Want) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// slotTakes are the takes of the slots jobs need, a key each in the order first met, and
// the keys of each job that needs some, by id.
func (p *producer) slotTakes(jobs []*job.Job) (need map[string][]string, list []rdb.SlotTake) {
	need = make(map[string][]string)
	at := make(map[string]int) // key → its take's index in list
	for _, j := range jobs {
		for _, n := range p.lim.slotNeeds(j) {
			need[j.ID] = append(need[j.ID], n.key)
			i, ok := at[n.key]
			if !ok {
				i, at[n.key] = len(list), len(list)
				list = append(list, rdb.SlotTake{Key: n.key, Limit: n.limit, Expire: n.expire})
			}
			list[i].Want = append(list[i].Want, p.p.holderFor(n.key, j.ID, j.ProcessCount+1))
		}
	}
	return need, list
}

// takeWithStale takes the slots of list. A key without room for every run asked for may
// hold slots of runs that are over (a worker that died): those are dropped, and taken
// again (a rate's starts expire on the server instead). A take that fails holds nothing:
// the jobs that need slots wait.
func (p *producer) takeWithStale(ctx context.Context, list []rdb.SlotTake, now time.Time) rdb.Slots {
	got, err := p.p.cfg.Store.TakeSlots(ctx, list)
	if err != nil {
		p.p.cfg.Log.Warn("taking running slots failed; the jobs that need them wait", "err", err)
		return rdb.Slots{}
	}
	full := make(rdb.Slots)
	for _, t := range list {
		if rdb.IsRateSlot(t.Key) {
			continue
		}
		for _, h := range t.Want {
			if !got.Holds(t.Key, h) {
				full[t.Key] = got[t.Key]
				break
			}
		}
	}
	if len(full) == 0 {
		return got
	}
	stale, err := p.p.cfg.Store.Stale(ctx, full, now)
	if err != nil {
		p.p.cfg.Log.Warn("reading the runs that hold running slots failed", "err", err)
	}
	var again []rdb.SlotTake
	for _, t := range list {
		if ids := stale[t.Key]; len(ids) > 0 {
			t.Stale = ids
			again = append(again, t)
		}
	}
	if len(again) > 0 {
		if more, err := p.p.cfg.Store.TakeSlots(ctx, again); err == nil {
			for key, held := range more {
				got[key] = held
			}
		}
	}
	return got
}

// keepHolders keeps, in order, the jobs that need no slot and those that got every slot
// they need (slots: their keys by job id), and gives back the slots of a job that got
// some but not all. A key that had no room holds its jobs back (fullUntil).
func (p *producer) keepHolders(ctx context.Context, jobs []*job.Job, need map[string][]string, got rdb.Slots, list []rdb.SlotTake, now time.Time) (kept []*job.Job, slots map[string][]string) {
	expire := make(map[string]time.Duration, len(list))
	for _, t := range list {
		expire[t.Key] = t.Expire
	}
	slots = make(map[string][]string)
	giveBack := make(map[string][]rdb.Holder)
	l := &p.lim
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
		// The first key without room holds its jobs back; the keys after it were not asked
		// for this run (a rate's start, see takeSlots), or are not the reason it waits.
		var have []string
		missing := false
		for _, key := range keys {
			switch {
			case got.Holds(key, p.p.holderFor(key, j.ID, j.ProcessCount+1)):
				have = append(have, key)
			case !missing:
				missing = true
				l.fullUntil[key] = fullUntil(got[key], expire[key], now)
			}
		}
		if len(have) == len(keys) {
			kept = append(kept, j)
			slots[j.ID] = keys
			continue
		}
		for _, key := range have {
			giveBack[key] = append(giveBack[key], p.p.holderFor(key, j.ID, j.ProcessCount+1))
		}
	}
	l.mu.Unlock()
	p.releaseSlots(ctx, giveBack)
	return kept, slots
}

// fullUntil is until when a key found full holds its jobs back: slotRecheck, or for a
// rate's (a holder expires after expire), until its oldest start expires.
func fullUntil(held map[string]rdb.HeldSlot, expire time.Duration, now time.Time) time.Time {
	until := now.Add(slotRecheck)
	if expire <= 0 {
		return until
	}
	var oldest time.Time
	for _, h := range held {
		if oldest.IsZero() || h.At.Before(oldest) {
			oldest = h.At
		}
	}
	if oldest.IsZero() {
		return until
	}
	return latest(until, oldest.Add(expire))
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
		pc := j.ProcessCount + 1
		if won[j.ID] {
			// A rate's slot is the start's: the run's end does not give it back.
			if held := slices.DeleteFunc(slices.Clone(keys), rdb.IsRateSlot); len(held) > 0 {
				if pr.slotRuns == nil {
					pr.slotRuns = make(map[rdb.RunKey][]string)
				}
				pr.slotRuns[rdb.RunKey{ID: j.ID, ProcessCount: pc}] = held
			}
			continue
		}
		for _, key := range keys {
			giveBack[key] = append(giveBack[key], p.p.holderFor(key, j.ID, pc))
		}
	}
	pr.slotMu.Unlock()
	p.releaseSlots(ctx, giveBack)
}

// dropSlots gives back the slots of the jobs of capped (slots: their keys by id) that a
// claim leaves out: those not in kept.
func (p *producer) dropSlots(ctx context.Context, capped, kept []*job.Job, slots map[string][]string) {
	if len(slots) == 0 || len(kept) == len(capped) {
		return
	}
	in := make(map[string]bool, len(kept))
	for _, j := range kept {
		in[j.ID] = true
	}
	giveBack := make(map[string][]rdb.Holder)
	for _, j := range capped {
		if in[j.ID] {
			continue
		}
		for _, key := range slots[j.ID] {
			giveBack[key] = append(giveBack[key], p.p.holderFor(key, j.ID, j.ProcessCount+1))
		}
		delete(slots, j.ID)
	}
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

// holderFor is the holder of key's slot for the run of job id that makes processCount pc.
func (p *Processor) holderFor(key, id string, pc int) rdb.Holder {
	if rdb.IsRateSlot(key) {
		return rdb.RateHolder(id, pc, p.cfg.QueueID)
	}
	return p.holder(id, pc)
}
