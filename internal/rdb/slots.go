package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Running caps (a job name's Limit.Running, a group's limit) are slots, held by runs. The
// side table SlotsSuffix holds, for each capped key (see NameSlot, GroupSlot), the runs
// that hold one of its slots: {jobId: {pc, at}}, pc being the processCount the run's
// claim sets and at when it took the slot. A worker takes slots before it claims, in one
// atomic update (so that workers taking at once never hold more than the cap), and gives
// them back with the run's outcome, or when the claim did not win the job. A holder whose run is over without giving its slot back (its
// worker died) is stale, and the next take that finds the key full drops it: Stale says
// which holders are, from their jobs as the table holds them.

// SlotsSuffix names the side table of running slots. The Node.js library never reads it.
const SlotsSuffix = "_slots"

// NameSlot is the key of the running cap of the jobs named name.
func NameSlot(name string) string { return "name:" + name }

// GroupSlot is the key of the running limit of group.
func GroupSlot(group string) string { return "group:" + group }

// GroupRateSlot is the key of the rate limit of group. Its slots are starts, not runs:
// each is held for the span of the rate (SlotTake.Expire) from its take, whatever the
// run does, and given back only when its claim did not win the job; a run's start holds
// one of them under RateHolder.
func GroupRateSlot(group string) string { return "grouprate:" + group }

// IsRateSlot reports whether key is the key of a rate (GroupRateSlot).
func IsRateSlot(key string) bool { return strings.HasPrefix(key, "grouprate:") }

// RateHolder is the holder of a rate slot for the start of job id that makes its
// processCount pc, by queue: one per start, so that two starts of one job within the
// rate's span (a quick retry) hold two.
func RateHolder(id string, pc int, queue string) Holder {
	return Holder{ID: id + "#" + strconv.Itoa(pc), PC: pc, Queue: queue}
}

// Holder is a run that holds, or wants, a slot: the job, the processCount its claim sets,
// and the queue that takes the slot for it. Two queues that read the same job both want
// its slot; only one gets it, and only that one claims the job (and only its release
// gives the slot back).
type Holder struct {
	ID    string `rethinkdb:"id"`
	PC    int    `rethinkdb:"pc"`
	Queue string `rethinkdb:"q"`
}

// SlotTake asks for slots of one key: the runs of Want, in order, while the key's holders
// number fewer than Limit, once the holders of Stale are dropped, and, with Expire, those
// taken longer than Expire ago by the server's clock (a rate's).
type SlotTake struct {
	Key    string        `rethinkdb:"key"`
	Limit  int           `rethinkdb:"limit"`
	Want   []Holder      `rethinkdb:"want"`
	Stale  []string      `rethinkdb:"stale"`
	Expire time.Duration `rethinkdb:"-"`
}

// HeldSlot is a run holding a slot, as its key's document stores it.
type HeldSlot struct {
	PC    int       `rethinkdb:"pc"`
	Queue string    `rethinkdb:"q"`
	At    time.Time `rethinkdb:"at"`
}

// Slots are the holders of the keys a take wrote, after it: key → job id → holder.
type Slots map[string]map[string]HeldSlot

// Holds reports whether run h holds a slot of key.
func (s Slots) Holds(key string, h Holder) bool {
	held, ok := s[key][h.ID]
	return ok && held.PC == h.PC && held.Queue == h.Queue
}

// slotsDoc is the id of the one document that holds every key's holders:
// {id, keys: {key: {jobId: {pc, at}}}}, a key without holders left out. One document
// makes a claim's takes one write, and an outcome batch's releases another, whatever the
// number of keys they touch (measured on RethinkDB 2.4.4, 20,000 jobs over 1,000 groups
// at C=50: a document per key cost two writes per job and halved the throughput).
const slotsDoc = "slots"

// TakeSlots takes slots for the runs of takes, in one atomic update of the slots
// document, and returns the holders of every key after it: a run holds a slot when
// Slots.Holds says so. A run that holds its slot already keeps it.
func (t *Table) TakeSlots(ctx context.Context, takes []SlotTake) (Slots, error) {
	rates, takes := SplitRates(takes)
	out := Slots{}
	if len(rates) > 0 {
		var err error
		if out, err = t.takeRates(ctx, rates); err != nil {
			return nil, err
		}
	}
	if len(takes) == 0 {
		return out, nil
	}
	held, err := t.takeSlots(ctx, takes)
	for key, h := range held {
		out[key] = h
	}
	return out, err
}

// takeSlots is TakeSlots of keys other than rates', in the slots document.
func (t *Table) takeSlots(ctx context.Context, takes []SlotTake) (Slots, error) {
	byKey := make(map[string]any, len(takes))
	for _, take := range takes {
		stale := take.Stale
		if stale == nil {
			stale = []string{}
		}
		byKey[take.Key] = map[string]any{"limit": take.Limit, "want": take.Want, "stale": stale, "expire": take.Expire.Seconds()}
	}
	slots := t.Side(SlotsSuffix)
	// Every value a query names more than once is bound with Do, so that the server
	// builds it once: a constant object the driver sends is rebuilt at each mention (the
	// first version, without, took 64 ms of server time for a take of 50 keys).
	term := slots.Get(slotsDoc).Replace(func(doc r.Term) any {
		return r.Do(r.Expr(byKey), objectOr(doc.Default(nil).Field("keys").Default(nil)), func(asked, keys r.Term) any {
			// Only the keys asked for are read and rewritten: the cost follows the claim,
			// not the number of keys with running jobs.
			changed := asked.Keys().Map(func(k r.Term) any {
				return []any{k, taken(fieldOr(keys, k, nil), asked.Field(k))}
			})
			return map[string]any{"id": slotsDoc, "keys": rewrite(keys, asked.Keys(), changed)}
		})
	}, r.ReplaceOpts{ReturnChanges: "always"})
	res, err := t.Write(ctx, term)
	if err == nil && res.Skipped > 0 {
		// A server that skips the replace of a missing document rather than insert it
		// (reqlite): make the document, and take again.
		empty := map[string]any{"id": slotsDoc, "keys": map[string]any{}}
		if _, err = t.Write(ctx, slots.Insert(empty, r.InsertOpts{Conflict: "update"})); err == nil {
			res, err = t.Write(ctx, term)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: take running slots: %w", t.Name, err)
	}
	var doc map[string]any
	if len(res.Changes) > 0 {
		doc, _ = res.Changes[0].NewValue.(map[string]any)
	}
	if doc == nil {
		if err := t.ReadOne(ctx, slots.Get(slotsDoc), &doc); err != nil {
			return nil, fmt.Errorf("queue %s: read running slots: %w", t.Name, err)
		}
	}
	out := make(Slots, len(takes))
	keys, _ := doc["keys"].(map[string]any)
	for _, take := range takes {
		out[take.Key] = heldSlots(keys[take.Key])
	}
	return out, nil
}

// rewrite is keys with the keys of names replaced by changed ([key, holders] pairs), a
// key left without holders dropped.
func rewrite(keys, names, changed r.Term) r.Term {
	return keys.Without(names).Merge(changed.Filter(func(kv r.Term) r.Term { return kv.Nth(1).Keys().Count().Gt(0) }).
		CoerceTo("object"))
}

// objectOr is v when it is an object, else an empty one: a slots document written by hand
// must not stop the takes.
func objectOr(v r.Term) r.Term {
	return r.Branch(v.TypeOf().Eq("OBJECT"), v, map[string]any{})
}

// holdersWhere is the holders of a key's value v that keep(id, holder) keeps. Only the
// entries that are holders ({pc: a number, ...}) count: anything else (written by hand)
// holds no slot, and is dropped by the next write of the key.
func holdersWhere(v r.Term, keep func(id, h r.Term) r.Term) r.Term {
	return objectOr(v).Do(func(m r.Term) any {
		return m.Keys().Filter(func(id r.Term) r.Term {
			return m.Field(id).Do(func(h r.Term) any {
				return r.Branch(h.TypeOf().Eq("OBJECT").And(h.Field("pc").Default(nil).TypeOf().Eq("NUMBER")), keep(id, h), false)
			})
		}).Map(func(id r.Term) any { return []any{id, m.Field(id)} }).CoerceTo("object")
	})
}

// taken is a key's holders held after the take asked: the holders but those it found
// stale, and then the runs it wants, in order, while there is room.
func taken(held, asked r.Term) r.Term {
	stale, expire := asked.Field("stale"), asked.Field("expire")
	live := func(h r.Term) r.Term {
		return r.Branch(expire.Gt(0), h.Field("at").Default(nil).Do(func(at r.Term) any {
			return r.Branch(at.TypeOf().Eq("PTYPE<TIME>"), at.Gt(r.Now().Sub(expire)), false)
		}), true)
	}
	return holdersWhere(held, func(id, h r.Term) r.Term { return stale.Contains(id).Not().And(live(h)) }).
		Do(func(kept r.Term) any {
			room := asked.Field("limit").Sub(kept.Keys().Count())
			add := asked.Field("want").
				Filter(func(w r.Term) r.Term { return kept.HasFields(w.Field("id")).Not() }).
				Limit(r.Branch(room.Gt(0), room, 0)).
				Map(func(w r.Term) any {
					return []any{w.Field("id"), map[string]any{"pc": w.Field("pc"), "q": w.Field("q"), "at": r.Now()}}
				}).
				CoerceTo("object")
			return kept.Merge(add)
		})
}

// heldSlots reads the holders of a key; what is not a holder (written by hand) is left
// out.
func heldSlots(v any) map[string]HeldSlot {
	m, _ := v.(map[string]any)
	out := make(map[string]HeldSlot, len(m))
	for id, h := range m {
		hm, _ := h.(map[string]any)
		pc, ok := docfmt.Number(hm["pc"])
		if !ok {
			continue
		}
		at, _ := hm["at"].(time.Time)
		q, _ := hm["q"].(string)
		out[id] = HeldSlot{PC: int(pc), Queue: q, At: at}
	}
	return out
}

// ReleaseSlots gives back the slots of runs, by key, in one update: each holder is
// dropped only while it is that run (same processCount, taken by the same queue), so that
// a late release never frees the slot of the job's next run, nor another queue's.
func (t *Table) ReleaseSlots(ctx context.Context, runs map[string][]Holder) error {
	if len(runs) == 0 {
		return nil
	}
	rel, rates := make(map[string]any, len(runs)), make(map[string]any)
	for key, hs := range runs {
		m := make(map[string]any, len(hs))
		for _, h := range hs {
			m[h.ID] = map[string]any{"pc": h.PC, "q": h.Queue}
		}
		if IsRateSlot(key) {
			rates[key] = m
		} else {
			rel[key] = m
		}
	}
	if len(rates) > 0 {
		if err := t.releaseRates(ctx, rates); err != nil {
			return err
		}
	}
	if len(rel) == 0 {
		return nil
	}
	_, err := t.Write(ctx, t.Side(SlotsSuffix).Get(slotsDoc).Replace(func(doc r.Term) any {
		return r.Do(r.Expr(rel), objectOr(doc.Default(nil).Field("keys").Default(nil)), func(rel, keys r.Term) any {
			changed := rel.Keys().Map(func(k r.Term) any {
				return []any{k, notMine(fieldOr(keys, k, nil), rel.Field(k))}
			})
			return r.Branch(doc.Eq(nil), nil, map[string]any{"id": slotsDoc, "keys": rewrite(keys, rel.Keys(), changed)})
		})
	}))
	if err != nil {
		return fmt.Errorf("queue %s: give running slots back: %w", t.Name, err)
	}
	return nil
}

// notMine is the holders of a key's value held but the runs of mine ({id: {pc, q}}): a
// holder is dropped only while it is that run (same processCount, the same queue).
func notMine(held, mine r.Term) r.Term {
	return holdersWhere(held, func(id, h r.Term) r.Term {
		return mine.HasFields(id).Not().Or(
			h.Field("pc").Ne(mine.Field(id).Field("pc")).Or(h.Field("q").Default(nil).Ne(mine.Field(id).Field("q"))))
	})
}

// claimGrace is how long a slot taken for a claim that has not landed counts as held:
// far longer than a claim takes, and short enough that a worker that died between the two
// holds the slot only that long.
const claimGrace = 30 * time.Second

// Stale returns the holders of slots whose runs are over, by key: their job is gone,
// was claimed again since, is no longer active in that run, or its lease has ended (its
// worker died: the Master's review gives it back to the queue); or its claim never landed
// within claimGrace. now is the server's time, near enough.
func (t *Table) Stale(ctx context.Context, slots Slots, now time.Time) (map[string][]string, error) {
	ids := make(map[string]bool)
	for _, held := range slots {
		for id := range held {
			ids[id] = true
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	var docs []map[string]any
	term := t.Term().GetAll(Anys(list)...).Pluck(docfmt.ID, docfmt.Status, docfmt.ProcessCount, docfmt.DateEnable)
	if err := t.ReadAll(ctx, term, &docs); err != nil {
		return nil, fmt.Errorf("queue %s: read the runs holding slots: %w", t.Name, err)
	}
	jobs := make(map[string]map[string]any, len(docs))
	for _, d := range docs {
		if id, ok := d[docfmt.ID].(string); ok {
			jobs[id] = d
		}
	}
	out := make(map[string][]string)
	for key, held := range slots {
		for id, h := range held {
			if staleHolder(jobs[id], h, now) {
				out[key] = append(out[key], id)
			}
		}
	}
	return out, nil
}

// staleHolder reports whether holder h's run is over, given its job's document (nil:
// gone).
func staleHolder(doc map[string]any, h HeldSlot, now time.Time) bool {
	if doc == nil {
		return true
	}
	pcf, _ := docfmt.Number(doc[docfmt.ProcessCount])
	pc := int(pcf)
	switch {
	case pc > h.PC:
		return true // claimed again since
	case pc < h.PC:
		return now.Sub(h.At) > claimGrace // its claim has not landed (yet)
	}
	status, _ := doc[docfmt.Status].(string)
	lease, isTime := doc[docfmt.DateEnable].(time.Time)
	return status != string(job.Active) || !isTime || lease.Before(now)
}
