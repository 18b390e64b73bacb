package rdb

import (
	"context"
	"fmt"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// The reads that tell what a waiting job waits for (rjq show, the dashboard's job page):
// each one document of a side table, whatever the table holds.

// HeldCounts returns how many runs hold a slot of each of keys (see NameSlot, GroupSlot,
// SequenceSlot), from one read of the slots document; a key without holders is 0. A
// holder whose run is over counts until the next take drops it (see Stale).
func (t *Table) HeldCounts(ctx context.Context, keys []string) (map[string]int, error) {
	out := make(map[string]int, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var held map[string]any
	term := objectOr(t.Side(SlotsSuffix).Get(slotsDoc).Default(nil).Field("keys").Default(nil)).Pluck(Anys(keys)...)
	if err := t.ReadOne(ctx, term, &held); err != nil && !NoTable(err) {
		return nil, fmt.Errorf("queue %s: read running slots: %w", t.Name, err)
	}
	for _, k := range keys {
		out[k] = len(heldSlots(held[k]))
	}
	return out, nil
}

// RateSlack is added to the span of a group's rate: a start is counted from its take,
// which comes before its claim by a few milliseconds, and by as much as the clocks of two
// machines differ; counted so, no start falls within the span of Starts counted before
// it. A start so holds its rate key (GroupRateSlot) for the span and RateSlack.
const RateSlack = time.Second

// RateStarts returns when the starts that hold rate key (GroupRateSlot) were taken, by
// the server's clock, from the key's document; those taken longer ago than the rate's span
// and RateSlack no longer count (the next take drops them).
func (t *Table) RateStarts(ctx context.Context, key string) ([]time.Time, error) {
	var holders map[string]any
	term := objectOr(t.Side(SlotsSuffix).Get(rateDoc(key)).Default(nil).Field("holders").Default(nil))
	if err := t.ReadOne(ctx, term, &holders); err != nil && !NoTable(err) {
		return nil, fmt.Errorf("queue %s: read the starts of a rate: %w", t.Name, err)
	}
	var out []time.Time
	for _, h := range heldSlots(holders) {
		out = append(out, h.At)
	}
	return out, nil
}

// Bucket is a rate limit's token bucket as read now: Tokens of Starts, refilled at Starts
// per Per.
type Bucket struct {
	Starts int
	Per    time.Duration
	Tokens float64
}

// Next is how long until the bucket holds a whole token: 0 when it holds one.
func (b Bucket) Next() time.Duration {
	if b.Tokens >= 1 || b.Starts <= 0 || b.Per <= 0 {
		return 0
	}
	perToken := b.Per / time.Duration(b.Starts)
	return time.Duration((1 - b.Tokens) * float64(perToken))
}

// ReadBucket reads the token bucket of the rate limit of job name name, refilled to the
// server's clock as TakeTokens would (without taking from it); ok false when name has no
// rate limit.
func (t *Table) ReadBucket(ctx context.Context, name string) (b Bucket, ok bool, err error) {
	now := r.Now().ToEpochTime()
	term := t.Side(LimitsSuffix).Get(name).Do(func(d r.Term) any {
		return r.Branch(d.Eq(nil), nil, r.Do(d.Field("starts").Default(0), d.Field("per").Default(0), func(starts, per r.Term) any {
			rate := r.Branch(per.Gt(0), starts.Div(per.Div(1000)), 0)
			filled := d.Field("tokens").Default(starts).Add(now.Sub(d.Field("at").Default(0)).Mul(rate))
			return map[string]any{"starts": starts, "per": per, "tokens": r.Branch(filled.Gt(starts), starts, filled)}
		}))
	})
	var got map[string]any
	if err := t.ReadOne(ctx, term, &got); err != nil {
		if NoTable(err) {
			return Bucket{}, false, nil
		}
		return Bucket{}, false, fmt.Errorf("queue %s: read the rate limit of %q: %w", t.Name, name, err)
	}
	starts, per := bucketNumber(got, "starts", 0), bucketNumber(got, "per", 0)
	if got == nil || starts <= 0 || per <= 0 {
		return Bucket{}, false, nil
	}
	return Bucket{Starts: int(starts), Per: time.Duration(per * float64(time.Millisecond)), Tokens: bucketNumber(got, "tokens", starts)}, true, nil
}
