package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// candidateTable is a job table of its own and an insert of a waiting job of a priority,
// whose id ends with last (which decides its part, rdb.PartOf), due at enable.
func candidateTable(t *testing.T) (*rdb.Table, func(p job.Priority, last byte, enable time.Time) string) {
	db, s := testserver.DB(t), testserver.Session(t)
	require.NoError(t, dbinit.Assert(context.Background(), dbinit.Target{Session: s, DB: db, Table: "jobs"}))
	tbl := &rdb.Table{Session: s, DB: db, Name: "jobs", QueueID: "worker:a", LimitJobLogs: 100}
	created := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	return tbl, func(p job.Priority, last byte, enable time.Time) string {
		j := job.New(nil, job.Options{Priority: p})
		j.ID, j.Status = j.ID[:len(j.ID)-1]+string(last), job.Waiting
		// Distinct creation times, in insert order: the index orders by them within a
		// priority.
		created = created.Add(time.Millisecond)
		j.DateCreated, j.DateEnable = created, enable.UTC().Truncate(time.Millisecond)
		_, err := r.DB(db).Table("jobs").Insert(j.Document()).RunWrite(s)
		require.NoError(t, err)
		return j.ID
	}
}

func ids(list []rdb.Candidate) []any {
	out := make([]any, len(list))
	for i, c := range list {
		out[i] = c.ID
	}
	return out
}

// A worker reading its part of the head takes the jobs of a higher priority in another
// worker's part before its own (a worker claiming its own part in priority order must
// not start low-priority jobs while higher ones wait elsewhere), and its own first
// within a priority.
func TestAPartReadNeverPassesOverAHigherPriorityElsewhere(t *testing.T) {
	tbl, insert := candidateTable(t)
	past := time.Now().Add(-time.Second)
	var mine, theirsNormal []string
	for range 4 {
		theirsNormal = append(theirsNormal, insert(job.Normal, '1', past))
		mine = append(mine, insert(job.Normal, '0', past))
	}
	theirsHigh := []string{insert(job.High, '3', past), insert(job.High, '5', past)}

	part := rdb.Part{Index: 0, Of: 2} // ids starting with an even digit
	c, err := tbl.ReadCandidates(context.Background(), 4, rdb.Skip{Part: part})
	require.NoError(t, err)
	assert.Equal(t, []any{theirsHigh[0], theirsHigh[1], mine[0], mine[1]}, ids(c.List),
		"the other part's higher priority first, then its own normal ones before the other part's")
	assert.True(t, c.NextDue.IsZero(), "no job that is not due")

	// The other part's normal jobs come only when its own run short.
	c, err = tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part})
	require.NoError(t, err)
	assert.Equal(t, []any{theirsHigh[0], theirsHigh[1], mine[0], mine[1], mine[2], mine[3], theirsNormal[0], theirsNormal[1]}, ids(c.List))

	// With enough of its own for the free slots, a read ahead takes none of the other
	// part's jobs of the same priority, which that part's worker aims at too; it still
	// takes the higher ones.
	c, err = tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part, Enough: 4})
	require.NoError(t, err)
	assert.Equal(t, []any{theirsHigh[0], theirsHigh[1], mine[0], mine[1], mine[2], mine[3]}, ids(c.List))
	c, err = tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part, Enough: 5})
	require.NoError(t, err)
	assert.Equal(t, []any{theirsHigh[0], theirsHigh[1], mine[0], mine[1], mine[2], mine[3], theirsNormal[0], theirsNormal[1]}, ids(c.List),
		"fewer than enough: the other part's too")
}

// A part read that comes back short of enough says whether its window held the whole
// index: then it holds every due job, of every part, and the earliest time one falls due;
// a worker need not read the whole head after it. A window the index fills says nothing
// of what lies beyond it.
func TestAShortPartReadSaysWhetherItSawTheWholeIndex(t *testing.T) {
	tbl, insert := candidateTable(t)
	now := time.Now()
	part := rdb.Part{Index: 0, Of: 2}
	theirs := insert(job.High, '1', now.Add(-time.Second))
	mine := insert(job.Normal, '0', now.Add(-time.Second))
	soon := now.Add(time.Minute).UTC().Truncate(time.Millisecond)
	insert(job.Low, '2', soon)

	c, err := tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part, Enough: 4})
	require.NoError(t, err)
	assert.True(t, c.Whole)
	assert.Equal(t, []any{theirs, mine}, ids(c.List), "every part's due jobs")
	assert.True(t, soon.Equal(c.NextDue), "got %v, want %v", c.NextDue, soon)

	c, err = tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part, Enough: 2})
	require.NoError(t, err)
	assert.False(t, c.Whole, "not short")

	// (8 + 32) × 2 entries fill the window: jobs not due yet, behind which due ones may
	// wait.
	for range 80 {
		insert(job.Highest, '4', soon)
	}
	c, err = tbl.ReadCandidates(context.Background(), 8, rdb.Skip{Part: part, Enough: 4})
	require.NoError(t, err)
	assert.False(t, c.Whole, "the window was full")
	assert.Len(t, c.List, 0)
}

// A worker whose last part read filled its slots with jobs of one priority reads its own
// jobs of that priority from the range of that priority's due jobs, with no window: it
// finds them behind any number of the other parts' jobs, never one that is not due yet,
// and every part's due jobs of a higher priority. While a name is held back, it reads
// the window as before.
func TestAPartReadOfOnePrioritysDueJobsHasNoWindow(t *testing.T) {
	tbl, insert := candidateTable(t)
	ctx := context.Background()
	now := time.Now()
	part := rdb.Part{Index: 0, Of: 2}
	normal := float64(job.Normal)
	// (4 + 32) × 2 entries fill a read of 4's window: the other part's due jobs, first
	// in the index.
	for i := range 80 {
		insert(job.Normal, '1', now.Add(-time.Hour).Add(time.Duration(i)*time.Millisecond))
	}
	var mine []any
	for i := range 3 {
		mine = append(mine, insert(job.Normal, '0', now.Add(-time.Minute).Add(time.Duration(i)*time.Millisecond)))
	}
	insert(job.Normal, '2', now.Add(time.Minute)) // the part's, not due yet
	high := insert(job.High, '3', now.Add(-time.Second))

	c, err := tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 2, DuePriority: &normal})
	require.NoError(t, err)
	assert.Equal(t, []any{high, mine[0], mine[1], mine[2]}, ids(c.List))
	assert.False(t, c.Whole, "a due range's read says nothing of the rest of the index")
	assert.True(t, c.NextDue.IsZero(), "no job of a higher priority waits: %v", c.NextDue)

	// The window holds none of the part's jobs.
	c, err = tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 2})
	require.NoError(t, err)
	assert.NotContains(t, ids(c.List), mine[0])
	assert.Contains(t, ids(c.List), high)

	c, err = tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 2, DuePriority: &normal, Names: []string{"held"}})
	require.NoError(t, err)
	assert.NotContains(t, ids(c.List), mine[0], "with a name held back, the window")

	// A job of a higher priority that is not due yet is not read, but its time is.
	soon := now.Add(30 * time.Second).UTC().Truncate(time.Millisecond)
	insert(job.Highest, '4', soon)
	c, err = tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 2, DuePriority: &normal})
	require.NoError(t, err)
	assert.Equal(t, []any{high, mine[0], mine[1], mine[2]}, ids(c.List))
	assert.True(t, soon.Equal(c.NextDue), "got %v, want %v", c.NextDue, soon)

	// A range that holds fewer of the part's due jobs than Enough: the window's answer.
	windowed, err := tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 4})
	require.NoError(t, err)
	c, err = tbl.ReadCandidates(ctx, 4, rdb.Skip{Part: part, Enough: 4, DuePriority: &normal})
	require.NoError(t, err)
	assert.Equal(t, ids(windowed.List), ids(c.List))
	assert.NotContains(t, ids(c.List), mine[0])
}

// A due-range read of more jobs than the server's first batch holds reads the same jobs
// as a small one: the part's own in the index's order past the other part's, and every
// part's job of a higher priority first.
func TestALargeDueRangeReadReadsWhatASmallOneDoes(t *testing.T) {
	tbl, insert := candidateTable(t)
	ctx := context.Background()
	now := time.Now()
	part := rdb.Part{Index: 0, Of: 2}
	normal := float64(job.Normal)
	var mine []any
	for i := range 130 {
		at := now.Add(-time.Minute).Add(time.Duration(i) * time.Millisecond)
		mine = append(mine, insert(job.Normal, '0', at))
		if i%2 == 0 {
			insert(job.Normal, '1', at)
		}
	}
	insert(job.Normal, '2', now.Add(time.Minute)) // the part's, not due yet
	high := insert(job.High, '3', now.Add(-time.Second))

	for _, n := range []int{120, 8} {
		c, err := tbl.ReadCandidates(ctx, n, rdb.Skip{Part: part, Enough: n, DuePriority: &normal})
		require.NoError(t, err)
		assert.Equal(t, append([]any{high}, mine[:n-1]...), ids(c.List), "a read of %d", n)
		assert.True(t, c.NextDue.IsZero(), "no job of a higher priority waits: %v", c.NextDue)
	}
}

// A read that found its jobs in the head says when a job of a higher priority it passed
// over falls due (a delayed job, a retry), so that a worker claiming from what it read
// ahead reads again then; one of a lower priority does not count.
func TestAReadSaysWhenAHigherPriorityFallsDue(t *testing.T) {
	for _, part := range []rdb.Part{{}, {Index: 0, Of: 2}} {
		t.Run("parts "+string(rune('0'+part.Of)), func(t *testing.T) {
			tbl, insert := candidateTable(t)
			now := time.Now()
			var due []string
			for range 3 {
				due = append(due, insert(job.Normal, '0', now.Add(-time.Second)))
			}
			insert(job.Low, '2', now.Add(time.Minute))
			c, err := tbl.ReadCandidates(context.Background(), 2, rdb.Skip{Part: part})
			require.NoError(t, err)
			assert.Equal(t, []any{due[0], due[1]}, ids(c.List))
			assert.True(t, c.NextDue.IsZero(), "a job of a lower priority does not count: %v", c.NextDue)

			at := now.Add(30 * time.Second).UTC().Truncate(time.Millisecond)
			insert(job.High, '1', at)
			c, err = tbl.ReadCandidates(context.Background(), 2, rdb.Skip{Part: part})
			require.NoError(t, err)
			assert.Equal(t, []any{due[0], due[1]}, ids(c.List))
			assert.True(t, at.Equal(c.NextDue), "the high one's time: got %v, want %v", c.NextDue, at)

			// A job of the same priority as the last read, not due yet, does not count
			// either: it comes after that priority's due jobs.
			soon := now.Add(10 * time.Second).UTC().Truncate(time.Millisecond)
			insert(job.Normal, '4', soon)
			c, err = tbl.ReadCandidates(context.Background(), 2, rdb.Skip{Part: part})
			require.NoError(t, err)
			assert.Equal(t, []any{due[0], due[1]}, ids(c.List))
			assert.True(t, at.Equal(c.NextDue), "still the high one's time: got %v, want %v", c.NextDue, at)

			// A read that runs short says when the first job of any priority falls due.
			c, err = tbl.ReadCandidates(context.Background(), 10, rdb.Skip{Part: part})
			require.NoError(t, err)
			assert.Equal(t, []any{due[0], due[1], due[2]}, ids(c.List))
			assert.True(t, soon.Equal(c.NextDue), "the earliest of all: got %v, want %v", c.NextDue, soon)
		})
	}
}

// HeadPriority is the priority of the job a claim would take first, of any part: a job
// that is not due yet, or that the skip leaves out, is passed over; an empty head, or a
// first job whose priority is not a number, gives no answer.
func TestHeadPriority(t *testing.T) {
	tbl, insert := candidateTable(t)
	ctx := context.Background()
	_, ok, err := tbl.HeadPriority(ctx, rdb.Skip{})
	require.NoError(t, err)
	assert.False(t, ok, "an empty table")

	past := time.Now().Add(-time.Second)
	insert(job.Low, '0', past)
	insert(job.Highest, '1', time.Now().Add(time.Hour))
	skipped := insert(job.High, '2', past)
	insert(job.Normal, '3', past)
	p, ok, err := tbl.HeadPriority(ctx, rdb.Skip{IDs: []any{skipped}, Part: rdb.Part{Index: 1, Of: 4}})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, float64(job.Normal), p, "past the delayed Highest and the skipped High, of any part")
	p, ok, err = tbl.HeadPriority(ctx, rdb.Skip{})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, float64(job.High), p)

	garbage := insert(job.Normal, '4', past)
	_, err = r.DB(tbl.DB).Table(tbl.Name).Get(garbage).Update(map[string]any{"priority": "urgent"}).RunWrite(tbl.Session.(*r.Session))
	require.NoError(t, err)
	_, ok, err = tbl.HeadPriority(ctx, rdb.Skip{})
	require.NoError(t, err)
	assert.False(t, ok, "a first job whose priority is not a number")
}

// A document written by hand whose id is not a string (a number, a bool; a time on a
// real server) never fails a part read. The part test once sliced every id, and one such
// waiting document failed every part read of every worker of the table, for as long as
// it waited. Its id now counts by its string form, and the read that proposes it sets it
// aside as a document that cannot be processed.
func TestAPartReadSurvivesAnIDThatIsNotAString(t *testing.T) {
	tbl, insert := candidateTable(t)
	past := time.Now().Add(-time.Second)
	mine := insert(job.Normal, '0', past)
	bad := []any{42}
	if !testserver.Get(t).IsReqlite() {
		// reqlite coerces no bool to a string, as RethinkDB does, and takes no time as a
		// primary key.
		bad = append(bad, true, time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	for _, id := range bad {
		j := job.New(nil, job.Options{})
		j.Status, j.DateEnable = job.Waiting, past.UTC().Truncate(time.Millisecond)
		doc := j.Document()
		doc["id"] = id
		_, err := r.DB(tbl.DB).Table("jobs").Insert(doc).RunWrite(testserver.Session(t))
		require.NoError(t, err)
	}
	normal := float64(job.Normal)
	for _, skip := range []rdb.Skip{
		{Part: rdb.Part{Index: 0, Of: 2}},
		{Part: rdb.Part{Index: 1, Of: 2}},
		{Part: rdb.Part{Index: 0, Of: 2}, Enough: 1, DuePriority: &normal},
	} {
		c, err := tbl.ReadCandidates(context.Background(), 10, skip)
		require.NoError(t, err, "part %+v", skip.Part)
		assert.Contains(t, ids(c.List), mine)
		var unreadable []any
		for _, cand := range c.List {
			if cand.ID != mine {
				assert.Error(t, cand.Err, "%v is proposed to be set aside", cand.ID)
				unreadable = append(unreadable, cand.ID)
			}
		}
		if skip.DuePriority == nil {
			// Short of its own: it takes every part's (ids come back as the driver reads
			// them: 42 as a float64, the time in its stored zone).
			assert.Len(t, unreadable, len(bad), "%v", unreadable)
		}
	}
}
