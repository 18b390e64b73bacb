package rdb

import (
	"context"
	"fmt"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// A rate's slots (GroupRateSlot) are starts, each held for the rate's span, so a key
// holds up to its limit of them whatever its runs do, and the keys of many groups with
// rates would make the one slots document large; every claim rewrites it. So each rate
// key has a document of its own in the slots side table, {id: key, key, holders:
// {holderId: {pc, q, at}}}, and a claim's takes of rates write the documents of its keys
// alone, in one query: each document is taken from atomically, as the slots document is.

// rateDoc is the id of the document of rate key: the key itself, which no other document
// of the slots table has for its id.
func rateDoc(key string) string { return key }

// SplitRates parts takes into the rates' and the others'.
func SplitRates(takes []SlotTake) (rates, others []SlotTake) {
	for _, t := range takes {
		if IsRateSlot(t.Key) {
			rates = append(rates, t)
		} else {
			others = append(others, t)
		}
	}
	return rates, others
}

// takeRates takes the starts of rate keys, one replace of each key's document in one
// query, and returns their holders after it.
func (t *Table) takeRates(ctx context.Context, takes []SlotTake) (Slots, error) {
	asked := make(map[string]any, len(takes))
	for _, take := range takes {
		stale := take.Stale
		if stale == nil {
			stale = []string{}
		}
		asked[take.Key] = map[string]any{"limit": take.Limit, "want": take.Want, "stale": stale, "expire": take.Expire.Seconds()}
	}
	side := t.Side(SlotsSuffix)
	term := r.Do(r.Expr(asked), func(asked r.Term) any {
		return asked.Keys().ForEach(func(k r.Term) any {
			return side.Get(k).Replace(func(doc r.Term) any {
				held := doc.Default(nil).Field("holders").Default(nil)
				return map[string]any{"id": k, "key": k, "holders": taken(held, asked.Field(k))}
			}, r.ReplaceOpts{ReturnChanges: "always"})
		})
	})
	res, err := t.Write(ctx, term)
	if err == nil && res.Skipped > 0 {
		// A server that skips the replace of a missing document rather than insert it
		// (reqlite): make the documents, and take again.
		empty := make([]any, len(takes))
		for i, take := range takes {
			empty[i] = map[string]any{"id": rateDoc(take.Key), "key": take.Key, "holders": map[string]any{}}
		}
		if _, err = t.Write(ctx, side.Insert(empty, r.InsertOpts{Conflict: "update"})); err == nil {
			res, err = t.Write(ctx, term)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: take the starts of rates: %w", t.Name, err)
	}
	out := make(Slots, len(takes))
	for _, ch := range res.Changes {
		doc, _ := ch.NewValue.(map[string]any)
		if key, ok := doc["key"].(string); ok {
			out[key] = heldSlots(doc["holders"])
		}
	}
	for _, take := range takes {
		if _, ok := out[take.Key]; !ok {
			out[take.Key] = map[string]HeldSlot{} // not written: none taken
		}
	}
	return out, nil
}

// releaseRates gives back the starts of claims that did not win their jobs, by rate key:
// each holder is dropped only while it is that claim's (see ReleaseSlots).
func (t *Table) releaseRates(ctx context.Context, rel map[string]any) error {
	side := t.Side(SlotsSuffix)
	_, err := t.Write(ctx, r.Do(r.Expr(rel), func(rel r.Term) any {
		return rel.Keys().ForEach(func(k r.Term) any {
			return side.Get(k).Replace(func(doc r.Term) any {
				return r.Branch(doc.Eq(nil), nil, doc.Merge(map[string]any{
					"holders": r.Literal(notMine(doc.Field("holders").Default(nil), rel.Field(k))),
				}))
			})
		})
	}))
	if err != nil {
		return fmt.Errorf("queue %s: give the starts of rates back: %w", t.Name, err)
	}
	return nil
}
