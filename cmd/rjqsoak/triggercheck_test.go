package main

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestCheckOrders(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ack := func(doc string, v, s int) ledgered { return ledgered{doc: doc, v: v, outcome: writeAcked, at: at(s)} }
	unknown := func(doc string, v int) ledgered { return ledgered{doc: doc, v: v, outcome: writeUnknown} }
	noop := func(doc string, v int) ledgered { return ledgered{doc: doc, v: v, outcome: writeNoop} }
	done := func(doc string, v, s int) orderJob {
		return orderJob{id: doc + "/" + string(rune('0'+v)), doc: doc, v: v, status: job.Completed,
			trigger: ordersTrigger, markDoc: doc, at: at(s)}
	}
	// a: three versions, all with jobs; b: its last write unknown and landed (at 30).
	writes := []ledgered{ack("a", 1, 0), ack("a", 2, 20), ack("a", 3, 40), ack("b", 1, 5), unknown("b", 2)}
	final := map[string]version{"a": {3, at(40)}, "b": {2, at(30)}}
	jobs := []orderJob{done("a", 1, 0), done("a", 2, 20), done("a", 3, 40), done("b", 1, 5), done("b", 2, 30)}
	fault := []span{{at(100), at(100)}}

	tests := []struct {
		name   string
		writes []ledgered
		final  map[string]version
		jobs   []orderJob
		spans  []span
		unique func(string) bool
		want   triggerResult // the counts compared
	}{
		{name: "clean", writes: writes, final: final, jobs: jobs, spans: fault,
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "a last version without a job", writes: writes, final: final, jobs: jobs[:2], spans: fault,
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 2, missed: 2, intermediate: 3, intermediateJobs: 2, quiet: 3, quietJobs: 2}},
		{name: "intermediate versions coalesced near a fault", writes: writes, final: final,
			jobs: []orderJob{done("a", 3, 40), done("b", 2, 30)}, spans: []span{{at(1), at(5)}},
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 2, intermediate: 3, intermediateJobs: 0, quiet: 1, quietJobs: 0}},
		{name: "a job not completed", writes: writes, final: final, spans: fault,
			jobs: append(append([]orderJob{}, jobs[:4]...), orderJob{id: "x", doc: "b", v: 2, status: job.Terminated, trigger: ordersTrigger, markDoc: "b", at: at(30)}),
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, unfinished: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "two jobs of a version", writes: writes, final: final, spans: fault,
			jobs: append(append([]orderJob{}, jobs...), done("a", 3, 40)),
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 6, doubled: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "jobs of versions never written", writes: append(append([]ledgered{}, writes...), noop("a", 4)), final: final, spans: fault,
			jobs: append(append([]orderJob{}, jobs...), done("a", 4, 50), done("a", 9, 60), done("b", 2, 31)),
			want: triggerResult{writes: 6, acked: 4, unknown: 1, noop: 1, docs: 2, jobs: 8, phantoms: 3, doubled: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "a job at another time than its write's", writes: writes, final: final, spans: fault,
			jobs: []orderJob{done("a", 1, 0), done("a", 2, 21), done("a", 3, 40), done("b", 1, 5), done("b", 2, 30)},
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, phantoms: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "a job marked for another document", writes: writes, final: final, spans: fault,
			jobs: append(append([]orderJob{}, jobs[:4]...), orderJob{id: "x", doc: "b", v: 2, status: job.Completed, trigger: ordersTrigger, markDoc: "a", at: at(30)}),
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, phantoms: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
		{name: "the table behind an acknowledged write", writes: writes, final: map[string]version{"a": {2, at(20)}, "b": {2, at(30)}}, jobs: jobs, spans: fault,
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, lostWrites: 1, intermediate: 2, intermediateJobs: 2, quiet: 2, quietJobs: 2}},
		{name: "an acknowledged document missing from the table", writes: writes, final: map[string]version{"b": {2, at(30)}}, jobs: jobs[3:], spans: fault,
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 1, jobs: 2, lostWrites: 1, intermediate: 1, intermediateJobs: 1, quiet: 1, quietJobs: 1}},
		{name: "a unique-key document's last version coalesced into an earlier job", writes: writes, final: final, jobs: jobs[:4], spans: fault,
			unique: func(doc string) bool { return doc == "b" },
			want:   triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, uniqueDocs: 1, jobs: 4, intermediate: 2, intermediateJobs: 2, quiet: 2, quietJobs: 2}},
		{name: "a document never landed: nothing to check", writes: []ledgered{unknown("c", 1)}, final: map[string]version{},
			want: triggerResult{writes: 1, unknown: 1}},
		{name: "the table at a version no write wrote", writes: writes, final: map[string]version{"a": {3, at(41)}, "b": {2, at(30)}},
			jobs: []orderJob{done("a", 1, 0), done("a", 2, 20), done("a", 3, 41), done("b", 1, 5), done("b", 2, 30)}, spans: fault,
			want: triggerResult{writes: 5, acked: 4, unknown: 1, docs: 2, jobs: 5, lostWrites: 1, phantoms: 1, intermediate: 3, intermediateJobs: 3, quiet: 3, quietJobs: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkOrders(tt.writes, tt.final, tt.jobs, tt.spans, 10*time.Second, tt.unique)
			assert.Equal(t, tt.want.clean(), got.clean(), "clean")
			got.details, got.noted = nil, nil
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNearestSpan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	spans := []span{{t0, t0.Add(5 * time.Second)}, {t0.Add(time.Minute), t0.Add(time.Minute)}}
	for _, tt := range []struct {
		at    time.Duration
		near  time.Duration
		quiet bool
	}{
		{-20 * time.Second, 20 * time.Second, true},
		{-10 * time.Second, 10 * time.Second, false},
		{2 * time.Second, 0, false},
		{15 * time.Second, 10 * time.Second, false},
		{16 * time.Second, 11 * time.Second, true},
		{45 * time.Second, 15 * time.Second, true},
		{65 * time.Second, 5 * time.Second, false},
	} {
		near, quiet := nearestSpan(t0.Add(tt.at), spans, 10*time.Second)
		assert.Equal(t, tt.near, near, "at %v", tt.at)
		assert.Equal(t, tt.quiet, quiet, "at %v", tt.at)
	}
	_, quiet := nearestSpan(t0, nil, 10*time.Second)
	assert.True(t, quiet, "no fault: all quiet")
}

func TestParseWrite(t *testing.T) {
	at := time.Unix(0, 1764400000123000000)
	for _, tt := range []struct {
		line string
		want ledgered
		ok   bool
	}{
		{"ack o1 3 1764400000123000000", ledgered{doc: "o1", v: 3, outcome: writeAcked, at: at}, true},
		{"unknown o1 4", ledgered{doc: "o1", v: 4, outcome: writeUnknown}, true},
		{"noop o1 5", ledgered{doc: "o1", v: 5, outcome: writeNoop}, true},
		{"ack o1 3", ledgered{}, false},
		{"ack o1 3 17644", ledgered{doc: "o1", v: 3, outcome: writeAcked, at: time.Unix(0, 17644)}, true},
		{"unknown o1", ledgered{}, false},
		{"unknown o1 x", ledgered{}, false},
		{"what o1 3", ledgered{}, false},
	} {
		got, ok := parseWrite(tt.line)
		assert.Equal(t, tt.ok, ok, tt.line)
		assert.Equal(t, tt.want, got, tt.line)
	}
	// A line the writer wrote reads back as the write.
	got, ok := parseWrite(joinFields(ledgerLine(writeAcked, "o9", 2, at)))
	assert.True(t, ok)
	assert.Equal(t, ledgered{doc: "o9", v: 2, outcome: writeAcked, at: at}, got)
}

func TestCollectWrites(t *testing.T) {
	at := time.Unix(0, 1764400000123000000)
	lines := "try o1 1\ntry o2 1\nack o1 1 1764400000123000000\ntry o1 2\nunknown o2 1\ntry o3 1\nnoop o1 2\ntry o1"
	got, err := collectWrites(bufio.NewScanner(strings.NewReader(lines)))
	assert.NoError(t, err)
	assert.Equal(t, []ledgered{
		{doc: "o1", v: 1, outcome: writeAcked, at: at},
		{doc: "o2", v: 1, outcome: writeUnknown},
		{doc: "o1", v: 2, outcome: writeNoop},
		{doc: "o3", v: 1, outcome: writeUnknown}, // tried, its outcome never written
	}, got)
}

func joinFields(fs []string) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += " "
		}
		s += f
	}
	return s
}
