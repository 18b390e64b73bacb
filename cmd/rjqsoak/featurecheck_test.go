package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestFeaturesOf(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want orderFeatures
	}{
		{"o0000020", orderFeatures{group: "g0", sequence: true}},
		{"o0000011", orderFeatures{group: "g1", child: true}},
		{"o0000017", orderFeatures{group: "g2", unique: true}},
		{"o0000024", orderFeatures{group: "g2", unique: true}},
		{"o0000026", orderFeatures{group: "g2", sequence: true, child: true}},
		{"o0000029", orderFeatures{group: "g2"}},
	} {
		assert.Equal(t, tt.want, featuresOf(tt.doc), tt.doc)
	}
}

func TestCheckFeatures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	w1, w2 := &child{name: "worker-01"}, &child{name: "worker-02"}
	killed := &child{name: "worker-03", killed: ms(30)}
	ok := func(w *child, from, to int) run {
		return run{pc: 1, worker: w, start: ms(from), end: ms(to), outcome: "ok"}
	}
	of := func(r run, doc string, v int) run { r.name, r.doc, r.v = orderJobName, doc, v; return r }
	order := func(id, doc string, v int, group string) orderJob {
		return orderJob{id: id, name: orderJobName, doc: doc, v: v, status: job.Completed, group: group}
	}
	seq := func(j orderJob, at int64) orderJob { j.seqKey, j.seqAt = sequenceKey(j.doc), at; return j }
	ship := func(id, parent string) orderJob {
		return orderJob{id: id, name: shipJobName, status: job.Completed, parents: []string{parent}}
	}
	writes := []ledgered{{doc: "o0000020", v: 1, outcome: writeAcked}, {doc: "o0000020", v: 2, outcome: writeUnknown},
		{doc: "o0000012", v: 1, outcome: writeAcked}, {doc: "o0000011", v: 1, outcome: writeAcked},
		{doc: "o0000017", v: 1, outcome: writeAcked}, {doc: "o0000017", v: 2, outcome: writeAcked}, {doc: "o0000017", v: 3, outcome: writeNoop}}
	final := map[string]version{"o0000020": {v: 2}, "o0000012": {v: 1}, "o0000011": {v: 1}, "o0000017": {v: 2}}

	tests := []struct {
		name  string
		jobs  []orderJob
		runs  map[string][]run
		check func(t *testing.T, f featureResult)
	}{
		{name: "g0's limit of 1 held, runs end to end", jobs: []orderJob{order("a", "o0000020", 1, "g0"), order("b", "o0000020", 2, "g0")},
			runs: map[string][]run{"a": {of(ok(w1, 0, 10), "o0000020", 1)}, "b": {of(ok(w2, 10, 20), "o0000020", 2)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, map[string]int{"g0": 1}, f.peaks)
			}},
		{name: "g0's limit of 1 exceeded", jobs: []orderJob{order("a", "o0000020", 1, "g0"), order("b", "o0000020", 2, "g0")},
			runs: map[string][]run{"a": {ok(w1, 0, 10)}, "b": {ok(w2, 5, 20)}},
			check: func(t *testing.T, f featureResult) {
				assert.False(t, f.clean())
				assert.Equal(t, 1, f.overCap)
				assert.Equal(t, 0, f.overCapExplained)
			}},
		{name: "g1's limit of 2 held by three overlapping in turn", jobs: []orderJob{order("a", "o0000009", 1, "g1"), order("b", "o0000019", 1, "g1"), order("c", "o0000029", 1, "g1")},
			runs: map[string][]run{"a": {ok(w1, 0, 10)}, "b": {ok(w2, 5, 20)}, "c": {ok(w1, 10, 30)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, 2, f.peaks["g1"])
			}},
		{name: "over a limit beside a run whose worker was killed", jobs: []orderJob{order("a", "o0000020", 1, "g0"), order("b", "o0000012", 1, "g0")},
			runs: map[string][]run{"a": {{pc: 1, worker: killed, start: ms(0)}}, "b": {ok(w2, 20, 40)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, 1, f.overCap)
				assert.Equal(t, 1, f.overCapExplained)
			}},
		{name: "a sequence in order", jobs: []orderJob{seq(order("a", "o0000020", 1, ""), 100), seq(order("b", "o0000020", 2, ""), 200)},
			runs: map[string][]run{"a": {{pc: 1, worker: w1, start: ms(0), end: ms(5), outcome: "fail"}, ok(w2, 1000, 1010)}, "b": {ok(w1, 1020, 1030)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, 2, f.sequenced)
			}},
		{name: "a sequence's job passes the one ahead while it waits for its retry", jobs: []orderJob{seq(order("a", "o0000020", 1, ""), 100), seq(order("b", "o0000020", 2, ""), 200)},
			runs:  map[string][]run{"a": {{pc: 1, worker: w1, start: ms(0), end: ms(5), outcome: "fail"}, ok(w2, 1000, 1010)}, "b": {ok(w1, 10, 30)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.outOfOrder) }},
		{name: "a sequence's later job runs while the earlier never did", jobs: []orderJob{seq(order("a", "o0000020", 1, ""), 100), seq(order("b", "o0000020", 2, ""), 200)},
			runs:  map[string][]run{"b": {ok(w1, 10, 30)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.outOfOrder) }},
		{name: "a sequence ordered by its places, not by the versions", jobs: []orderJob{seq(order("a", "o0000020", 2, ""), 300), seq(order("b", "o0000020", 1, ""), 200)},
			runs:  map[string][]run{"a": {ok(w1, 40, 50)}, "b": {ok(w1, 10, 30)}},
			check: func(t *testing.T, f featureResult) { assert.True(t, f.clean()) }},
		{name: "a child after its parent completed", jobs: []orderJob{order("p", "o0000011", 1, ""), ship("c", "p")},
			runs: map[string][]run{"p": {{pc: 1, worker: w1, start: ms(0), end: ms(5), outcome: "fail"}, ok(w1, 10, 20)}, "c": {ok(w2, 25, 30)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, 1, f.children)
			}},
		{name: "a child before its parent completed", jobs: []orderJob{order("p", "o0000011", 1, ""), ship("c", "p")},
			runs:  map[string][]run{"p": {{pc: 1, worker: w1, start: ms(0), end: ms(5), outcome: "fail"}, ok(w1, 10, 20)}, "c": {ok(w2, 8, 9)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.childEarly) }},
		{name: "a completed parent without its child", jobs: []orderJob{order("p", "o0000011", 1, "")},
			runs:  map[string][]run{"p": {ok(w1, 10, 20)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.childMissing) }},
		{name: "a child not completed", jobs: []orderJob{order("p", "o0000011", 1, ""), {id: "c", name: shipJobName, status: job.Waiting, parents: []string{"p"}}},
			runs:  map[string][]run{"p": {ok(w1, 10, 20)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.childUnfinished) }},
		{name: "a unique key run twice at once", jobs: []orderJob{{id: "u", name: orderJobName, doc: "o0000017", v: 2, status: job.Completed, uniqueKey: "order-o0000017"}},
			runs: map[string][]run{"u": {of(ok(w1, 0, 20), "o0000017", 1), of(ok(w2, 10, 30), "o0000017", 2)}},
			check: func(t *testing.T, f featureResult) {
				assert.Equal(t, 1, f.twiceAtOnce)
				assert.Equal(t, 0, f.twiceExplained)
				assert.Equal(t, 2, f.uniqueRuns)
				assert.Equal(t, 1, f.uniqueLastRan)
			}},
		{name: "a unique key's versions one after the other, its last coalesced", jobs: []orderJob{{id: "u", name: orderJobName, doc: "o0000017", v: 1, status: job.Completed, uniqueKey: "order-o0000017"}},
			runs: map[string][]run{"u": {of(ok(w1, 0, 20), "o0000017", 1), of(ok(w2, 30, 40), "o0000017", 1)}},
			check: func(t *testing.T, f featureResult) {
				assert.True(t, f.clean())
				assert.Equal(t, 0, f.uniqueLastRan)
				assert.Equal(t, 1, f.uniqueDocs)
			}},
		{name: "a run of a version never written", jobs: []orderJob{order("a", "o0000017", 3, "")},
			runs:  map[string][]run{"a": {of(ok(w1, 0, 20), "o0000017", 3)}},
			check: func(t *testing.T, f featureResult) { assert.Equal(t, 1, f.phantomRuns) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, checkFeatures(tt.jobs, tt.runs, writes, final, map[string]int{"g0": 1, "g1": 2, "": 4}))
		})
	}
}
