package listing

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// tieOrder is why a list whose jobs share keys of their index is not tested on reqlite.
const tieOrder = "it reads the entries of one key of an index in no set order, where RethinkDB reads them by id (the order of the jobs of one key)"

// filtered is a job of the filters' test as it was written.
type filtered struct {
	id, group, sequence string
	status              job.Status
	place               float64
	at                  time.Time // dateEnable
}

// idsOf are the ids of the jobs keep keeps, in the order less puts them.
func idsOf(jobs []filtered, keep func(filtered) bool, less func(a, b filtered) int) []string {
	var of []filtered
	for _, j := range jobs {
		if keep(j) {
			of = append(of, j)
		}
	}
	slices.SortFunc(of, less)
	out := []string{}
	for _, j := range of {
		out = append(out, j.id)
	}
	return out
}

// Blocked jobs page by id through the status index, a sequence's unfinished jobs in the
// order they run through the sequence index, a group's jobs of a status a bounded page at
// a time: each both ways, each job once.
func TestChronoListsBlockedJobsSequencesAndGroups(t *testing.T) {
	s := testserver.Session(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "filters"
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: name}))
	table := r.DB(db).Table(name)

	t.Run("a table without the sequence index lists no sequence", func(t *testing.T) {
		p, err := Chrono(ctx, s, table, Query{Sequence: "acct-7", Limit: 5})
		require.NoError(t, err)
		assert.Empty(t, p.Jobs)
		assert.Empty(t, p.Older)
	})

	tbl := &rdb.Table{Session: s, DB: db, Name: name}
	require.NoError(t, tbl.EnsureSequenceIndex(ctx))
	_, err := table.IndexWait(rdb.IndexSequence).Run(s)
	require.NoError(t, err)

	jobs := writeFiltered(t, s, table)
	byID := func(a, b filtered) int { return cmp.Compare(a.id, b.id) }
	byPlace := func(a, b filtered) int { return cmp.Compare(a.place, b.place) }
	byClaim := func(a, b filtered) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.id, b.id)) }
	unfinished := func(st job.Status) bool { return st == job.Waiting || st == job.Active || st == job.Failed }

	for _, tc := range []struct {
		name  string
		q     Query
		want  []string
		limit []int
	}{
		{"blocked: by id", Query{Status: "blocked"},
			idsOf(jobs, func(j filtered) bool { return j.status == job.Blocked }, byID), []int{1, 4, 100}},
		{"a sequence: its unfinished jobs in the order they run", Query{Sequence: "acct-7"},
			idsOf(jobs, func(j filtered) bool { return j.sequence == "acct-7" && unfinished(j.status) }, byPlace), []int{1, 3, 100}},
		{"a sequence's waiting jobs", Query{Sequence: "acct-7", Status: "waiting"},
			idsOf(jobs, func(j filtered) bool { return j.sequence == "acct-7" && j.status == job.Waiting }, byPlace), []int{1, 100}},
		{"a sequence's blocked jobs, which its index does not hold", Query{Sequence: "acct-8", Status: "blocked"},
			idsOf(jobs, func(j filtered) bool { return j.sequence == "acct-8" && j.status == job.Blocked }, byID), []int{1, 100}},
		{"a group's waiting jobs", Query{Group: "tenant-q", Status: "waiting"},
			idsOf(jobs, func(j filtered) bool { return j.group == "tenant-q" && j.status == job.Waiting }, byClaim), []int{1, 2, 100}},
		{"a group's blocked jobs", Query{Group: "tenant-r", Status: "blocked"},
			idsOf(jobs, func(j filtered) bool { return j.group == "tenant-r" && j.status == job.Blocked }, byID), []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q.Status == "blocked" || tc.q.Group != "" {
				testserver.SkipOnReqlite(t, tieOrder)
			}
			require.NotEmpty(t, tc.want, "the test has jobs to find")
			for _, scan := range []int{SearchScan, 3} {
				searchScan = scan
				for _, limit := range tc.limit {
					forward, backward := walkBothWays(t, ctx, s, table, tc.q, limit)
					assert.Equal(t, tc.want, forward, "limit %d, looking at %d, forward", limit, scan)
					assert.Equal(t, tc.want, backward, "limit %d, looking at %d, backward", limit, scan)
				}
			}
			searchScan = SearchScan
		})
	}

	t.Run("the rows say their group and sequence", func(t *testing.T) {
		p, err := Chrono(ctx, s, table, Query{Sequence: "acct-7", Group: "tenant-q", Limit: 100})
		require.NoError(t, err)
		require.NotEmpty(t, p.Jobs)
		for _, j := range p.Jobs {
			assert.Equal(t, "tenant-q", j.Group)
			assert.Equal(t, "acct-7", j.Sequence)
		}
	})
	t.Run("a group without a status or a sequence has no order", func(t *testing.T) {
		_, err := Chrono(ctx, s, table, Query{Group: "tenant-q", Limit: 5})
		assert.ErrorIs(t, err, job.ErrInvalid)
	})
}

// writeFiltered writes the jobs of the filters' test: of every status, in two groups and
// none, half of them in two sequences, at places out of the order of their ids and writes.
func writeFiltered(t *testing.T, s *r.Session, table r.Term) []filtered {
	t.Helper()
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var jobs []filtered
	docs := []any{}
	statuses := []job.Status{job.Waiting, job.Blocked, job.Active, job.Failed, job.Completed, job.Waiting, job.Blocked}
	for i := range 41 {
		j := filtered{id: fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919%1000, i), status: statuses[i%len(statuses)],
			group: []string{"", "tenant-q", "tenant-r"}[i%3], at: base.Add(time.Duration(i%5) * time.Second)}
		doc := map[string]any{"id": j.id, "status": string(j.status), "priority": 40, "dateEnable": j.at, "dateCreated": base, "name": "n"}
		if j.status == job.Completed {
			doc["dateFinished"] = base
		}
		if j.group != "" {
			doc[docfmt.Group] = j.group
		}
		if i%2 == 0 {
			// Places out of the order of the ids and of the writes.
			j.sequence, j.place = []string{"acct-7", "acct-8"}[i%4/2], float64((i*37)%101)
			doc[docfmt.Sequence], doc[docfmt.SequenceAt] = j.sequence, j.place
		}
		jobs = append(jobs, j)
		docs = append(docs, doc)
	}
	_, err := table.Insert(docs).RunWrite(s)
	require.NoError(t, err)
	return jobs
}
