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
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// stored is a job as the test wrote it, with what orders it.
type stored struct {
	id       string
	status   job.Status
	priority int
	at       time.Time // dateFinished, or dateEnable
	created  time.Time
}

// ids are the ids of a page's jobs.
func ids(p ChronoPage) []string {
	var out []string
	for _, j := range p.Jobs {
		out = append(out, j.ID)
	}
	return out
}

// pageThrough reads every page of status, limit jobs a page, from the start to the end
// through the Older cursors, checking that each page's Newer cursor leads back to the
// page before it; then from the last page back to the start through the Newer cursors.
// It returns the ids of both walks in list order. A bounded list (see Query.bounded)
// has pages of any size, some empty, whose Newer cursors are not checked one by one.
func pageThrough(t *testing.T, ctx context.Context, s *r.Session, table r.Term, status string, limit int) (forward, backward []string) {
	t.Helper()
	return walkBothWays(t, ctx, s, table, Query{Status: status}, limit)
}

// walkBothWays is pageThrough for any query q (its From, Newer and Limit set here).
func walkBothWays(t *testing.T, ctx context.Context, s *r.Session, table r.Term, q Query, limit int) (forward, backward []string) {
	t.Helper()
	o, err := q.order()
	require.NoError(t, err)
	bounded := q.bounded(o)
	at := func(from string, newer bool) Query {
		q.From, q.Newer, q.Limit = from, newer, limit
		return q
	}
	var pages []ChronoPage
	for cur := ""; ; {
		p, err := Chrono(ctx, s, table, at(cur, false))
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Jobs), limit)
		switch {
		case cur == "":
			assert.Empty(t, p.Newer, "the first page has nothing before it")
		case !bounded:
			require.NotEmpty(t, p.Newer, "a later page has a page before it")
			back, err := Chrono(ctx, s, table, at(p.Newer, true))
			require.NoError(t, err)
			assert.Equal(t, ids(pages[len(pages)-1]), ids(back), "the page before this one")
		}
		pages = append(pages, p)
		forward = append(forward, ids(p)...)
		if p.Older == "" {
			break
		}
		require.Less(t, len(pages), 200, "the walk does not end")
		cur = p.Older
	}
	// Back from the last page that has a page before it (a bounded list may end on an
	// empty page, which has none).
	k := len(pages) - 1
	for k > 0 && pages[k].Newer == "" {
		k--
	}
	for _, p := range pages[k:] {
		backward = append(backward, ids(p)...)
	}
	for cur := pages[k].Newer; cur != ""; {
		p, err := Chrono(ctx, s, table, at(cur, true))
		require.NoError(t, err)
		backward = append(ids(p), backward...)
		require.Less(t, len(backward), 1000, "the walk back does not end")
		cur = p.Newer
	}
	return forward, backward
}

func TestChronoPagesEveryJobOnceInTimeOrderBothWays(t *testing.T) {
	t.Run("distinct keys", func(t *testing.T) { testChrono(t, false) })
	t.Run("keys shared by several jobs, and one of the wrong type", func(t *testing.T) {
		testserver.SkipOnReqlite(t, tieOrder)
		testChrono(t, true)
	})
}

// testChrono fills a table with finished and waiting jobs and pages through them. With
// ties, most finished jobs share their dateFinished with others (a worker finishes a batch
// at one time), waiting ones their keys, and one document has a dateFinished that is not
// a time.
func testChrono(t *testing.T, ties bool) {
	s := testserver.Session(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "chrono"
	if ties {
		name = "chrono_ties"
	}
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: name}))
	table := r.DB(db).Table(name)

	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	spread := func(i, n int, unit time.Duration) time.Time {
		if ties {
			return base.Add(time.Duration(i%n) * unit)
		}
		return base.Add(time.Duration(i) * unit)
	}
	var jobs []stored
	docs := []any{}
	for i := range 23 {
		st := stored{id: fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919%1000, i), status: job.Completed,
			at: spread(i, 4, time.Minute), created: base}
		if i%5 == 0 {
			st.status = job.Cancelled
		}
		jobs = append(jobs, st)
		docs = append(docs, map[string]any{"id": st.id, "status": string(st.status), "dateFinished": st.at, "dateCreated": st.created,
			"priority": 40, "dateEnable": base, "name": "n", "progress": 100})
	}
	for i := range 17 {
		st := stored{id: fmt.Sprintf("w%07x-0000-4000-8000-%012d", i*104729%100000, i), status: job.Waiting,
			priority: []int{10, 40, 40, 60}[i%4], at: spread(i, 3, time.Second), created: spread(i, 2, time.Millisecond)}
		jobs = append(jobs, st)
		docs = append(docs, map[string]any{"id": st.id, "status": "waiting", "priority": st.priority, "dateEnable": st.at, "dateCreated": st.created, "name": "n"})
	}
	if ties {
		docs = append(docs, map[string]any{"id": "garbage", "status": "completed", "dateFinished": "yesterday", "dateCreated": base, "priority": 40, "dateEnable": base})
	}
	_, err := table.Insert(docs).RunWrite(s)
	require.NoError(t, err)

	t.Run("completed: newest finished first, ties by id", func(t *testing.T) {
		var want []string
		if ties {
			want = append(want, "garbage") // a string sorts after every time: first, newest first
		}
		want = append(want, newestFinished(jobs, job.Completed)...)
		for _, limit := range []int{1, 4, 7, 100} {
			forward, backward := pageThrough(t, ctx, s, table, "completed", limit)
			assert.Equal(t, want, forward, "limit %d, forward", limit)
			assert.Equal(t, want, backward, "limit %d, backward", limit)
		}
	})
	t.Run("waiting: the order workers take them", func(t *testing.T) {
		var want []string
		var waiting []stored
		for _, j := range jobs {
			if j.status == job.Waiting {
				waiting = append(waiting, j)
			}
		}
		slices.SortFunc(waiting, func(a, b stored) int {
			return cmp.Or(cmp.Compare(a.priority, b.priority), a.at.Compare(b.at), a.created.Compare(b.created), cmp.Compare(a.id, b.id))
		})
		for _, j := range waiting {
			want = append(want, j.id)
		}
		for _, limit := range []int{1, 3, 100} {
			forward, backward := pageThrough(t, ctx, s, table, "waiting", limit)
			assert.Equal(t, want, forward, "limit %d, forward", limit)
			assert.Equal(t, want, backward, "limit %d, backward", limit)
		}
	})
	t.Run("cancelled: newest finished first, a bounded page at a time", func(t *testing.T) {
		want := newestFinished(jobs, job.Cancelled)
		for _, scan := range []int{SearchScan, 3} {
			searchScan = scan
			forward, backward := pageThrough(t, ctx, s, table, "cancelled", 2)
			assert.Equal(t, want, forward, "looking at %d a page, forward", scan)
			assert.Equal(t, want, backward, "looking at %d a page, backward", scan)
		}
		searchScan = SearchScan
	})
	t.Run("bad cursors and statuses without an order", func(t *testing.T) {
		_, err := Chrono(ctx, s, table, Query{Status: "completed", From: "not a cursor", Limit: 5})
		assert.ErrorIs(t, err, job.ErrInvalid)
		_, err = Chrono(ctx, s, table, Query{Limit: 5})
		assert.ErrorIs(t, err, job.ErrInvalid)
	})
}

// newestFinished are the ids of the jobs of status, newest dateFinished first, ties by id
// from the highest: the order of a finished list.
func newestFinished(jobs []stored, status job.Status) []string {
	var of []stored
	for _, j := range jobs {
		if j.status == status {
			of = append(of, j)
		}
	}
	slices.SortFunc(of, func(a, b stored) int { return cmp.Or(b.at.Compare(a.at), cmp.Compare(b.id, a.id)) })
	ids := make([]string, len(of))
	for i, j := range of {
		ids[i] = j.id
	}
	return ids
}

func TestChronoSearchesDataAndLogsAPageOfJobsAtATime(t *testing.T) {
	s := testserver.Session(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "search"}))
	table := r.DB(db).Table("search")
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var byCustomer, timedOut []string // newest first
	docs := []any{}
	for i := range 30 {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		entry := map[string]any{"message": "Job completed", "date": base}
		if i%4 == 0 {
			entry = map[string]any{"message": "Job failed", "errorMessage": "Connection TIMEOUT after 5s", "date": base}
		}
		docs = append(docs, map[string]any{"id": id, "status": "completed", "dateFinished": base.Add(time.Duration(i) * time.Second),
			"dateCreated": base, "priority": 40, "dateEnable": base, "name": "n",
			"data": map[string]any{"customer": map[string]any{"id": i % 3}}, "log": []any{entry}})
		if i%3 == 1 {
			byCustomer = append([]string{id}, byCustomer...)
		}
		if i%4 == 0 {
			timedOut = append([]string{id}, timedOut...)
		}
	}
	// Documents a search cannot read: they match nothing and fail nothing.
	docs = append(docs,
		map[string]any{"id": "garbage-1", "status": "completed", "dateFinished": base, "data": "text", "log": "not a list"},
		map[string]any{"id": "garbage-2", "status": "completed", "dateFinished": base, "data": map[string]any{"customer": 7}, "log": []any{7, nil}})
	_, err := table.Insert(docs).RunWrite(s)
	require.NoError(t, err)

	walk := func(q Query) (found []string, pages int) {
		for {
			p, err := Chrono(ctx, s, table, q)
			require.NoError(t, err)
			pages++
			assert.LessOrEqual(t, p.Scanned, searchScan)
			found = append(found, ids(p)...)
			if p.Older == "" {
				return found, pages
			}
			require.Less(t, pages, 100)
			q.From = p.Older
		}
	}
	for _, scan := range []int{SearchScan, 7} {
		searchScan = scan
		t.Run(fmt.Sprintf("looking at %d jobs a page", scan), func(t *testing.T) {
			found, _ := walk(Query{Status: "completed", Limit: 4, Field: "customer.id", Value: 1.0})
			assert.Equal(t, byCustomer, found, "by a field of data")
			found, _ = walk(Query{Status: "completed", Limit: 100, Text: "timeout"})
			assert.Equal(t, timedOut, found, "by the text of an error, in any case")
			found, _ = walk(Query{Status: "completed", Limit: 100, Field: "customer.id", Value: 1.0, Text: "TIMEOUT"})
			var both []string
			for _, id := range byCustomer {
				if slices.Contains(timedOut, id) {
					both = append(both, id)
				}
			}
			assert.Equal(t, both, found, "both")
			found, pages := walk(Query{Status: "completed", Limit: 100, Text: "no such text"})
			assert.Empty(t, found)
			assert.Equal(t, (32+scan-1)/scan+b2i(32%scan == 0), pages, "a page per %d jobs looked at", scan)
		})
	}
	searchScan = SearchScan
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Thousands of jobs that share their key (a bulk cancel finishes them at one time) page
// like any: a full page, and the next one after it. (Ordered by the index and the id, as
// a second key, RethinkDB 2.4.4 answered one job of 10,000.)
func TestChronoPagesThousandsOfJobsOfOneKey(t *testing.T) {
	testserver.SkipOnReqlite(t, tieOrder)
	s := testserver.Session(t)
	db := testserver.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, dbinit.Assert(ctx, dbinit.Target{Session: s, DB: db, Table: "ties"}))
	table := r.DB(db).Table("ties")
	docs := make([]any, 5000)
	for i := range docs {
		docs[i] = map[string]any{"id": fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), "status": "completed",
			"name": "n", "priority": 40, "dateCreated": r.Now(), "dateFinished": r.Now(), "log": []any{}}
	}
	_, err := table.Insert(docs).RunWrite(s)
	require.NoError(t, err)
	first, err := Chrono(ctx, s, table, Query{Status: "completed", Limit: 5})
	require.NoError(t, err)
	require.Len(t, first.Jobs, 5)
	assert.Equal(t, "00004999-0000-4000-8000-000000000000", first.Jobs[0].ID, "the newest, ties by id the other way round")
	next, err := Chrono(ctx, s, table, Query{Status: "completed", Limit: 5, From: first.Older})
	require.NoError(t, err)
	require.Len(t, next.Jobs, 5)
	assert.Equal(t, "00004994-0000-4000-8000-000000000000", next.Jobs[0].ID)
}
