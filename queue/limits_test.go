package queue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// starts records when each job started, by name.
type starts struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (s *starts) handler(ctx context.Context, j *job.Job) (any, error) {
	s.mu.Lock()
	s.at[j.Name] = append(s.at[j.Name], time.Now())
	s.mu.Unlock()
	return nil, nil
}

func (s *starts) of(name string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at[name])
}

// Two processing queues share one bucket: the jobs of a rate-limited name start at most
// Starts at once and then one per Per/Starts, while jobs of other names are not held up.
func TestRateLimitAcrossWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 5})
	other := newQueue(t, f, &queue.Options{Concurrency: 5, MasterInterval: -1})
	ctx := testContext(t)
	const burst, per = 3, 900 * time.Millisecond // a token every 300 ms
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Starts: burst, Per: per}))
	limits, err := f.q.Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.Limit{"mail": {Starts: burst, Per: per}}, limits)

	var jobs []*job.Job
	for range 9 {
		jobs = append(jobs, f.q.CreateJob(nil).SetName("mail"))
	}
	for range 3 {
		jobs = append(jobs, f.q.CreateJob(nil).SetName("report"))
	}
	events := f.q.Events(ctx, queue.EventCompleted)
	rec := &starts{at: map[string][]time.Time{}}
	require.NoError(t, f.q.Process(rec.handler))
	require.NoError(t, other.Process(rec.handler))
	added := time.Now()
	_, err = f.q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	waitForAll(t, events, queue.EventCompleted, jobs...)

	mail, report := rec.of("mail"), rec.of("report")
	require.Len(t, mail, 9)
	require.Len(t, report, 3)
	for _, at := range report {
		assert.Less(t, at.Sub(added), 2*time.Second, "a job of another name is not held back by the limit")
	}
	slices.SortFunc(mail, time.Time.Compare)
	slack := 150 * time.Millisecond
	for i, at := range mail {
		if i >= burst {
			earliest := mail[0].Add(time.Duration(i-burst+1) * per / burst)
			assert.False(t, at.Before(earliest.Add(-slack)), "start %d came %v after the first; the bucket allows it after %v",
				i+1, at.Sub(mail[0]), earliest.Sub(mail[0]))
		}
	}
}

// A job outside its name's window waits, due, while others run; it starts once the
// window opens (here: once the limit is set to a window that is open now).
func TestTimeWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	now := time.Now().UTC()
	closed := &queue.Window{From: now.Add(2 * time.Hour).Format("15:04"), To: now.Add(3 * time.Hour).Format("15:04")}
	require.NoError(t, f.q.SetLimit(ctx, "nightly", queue.Limit{Window: closed}))
	events := f.q.Events(ctx, queue.EventCompleted)
	added, err := f.q.AddJob(ctx, f.q.CreateJob(nil).SetName("nightly"), f.q.CreateJob(nil).SetName("now"))
	require.NoError(t, err)
	rec := &starts{at: map[string][]time.Time{}}
	require.NoError(t, f.q.Process(rec.handler))
	waitFor(t, events, queue.EventCompleted, added[1].ID)
	assert.Never(t, func() bool { return len(rec.of("nightly")) > 0 }, time.Second, 50*time.Millisecond,
		"the job waits outside its window")
	assert.Equal(t, job.Waiting, f.get(t, added[0].ID).Status)

	open := &queue.Window{From: now.Add(-time.Hour).Format("15:04"), To: now.Add(time.Hour).Format("15:04")}
	require.NoError(t, f.q.SetLimit(ctx, "nightly", queue.Limit{Window: open}))
	waitFor(t, events, queue.EventCompleted, added[0].ID)
}

func TestLimitBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testContext(t)
	for _, l := range []queue.Limit{{}, {Starts: 1}, {Starts: -1, Per: time.Second}, {Window: &queue.Window{From: "25:00", To: "01:00"}}} {
		assert.ErrorIs(t, f.q.SetLimit(ctx, "mail", l), queue.ErrInvalidLimit, "%+v", l)
	}
	assert.ErrorIs(t, f.q.SetLimit(ctx, "", queue.Limit{Starts: 1, Per: time.Second}), job.ErrInvalid)
	limits, err := f.q.Limits(ctx)
	require.NoError(t, err)
	assert.Empty(t, limits)
	assert.ErrorIs(t, f.q.RemoveLimit(ctx, "mail"), job.ErrNotFound)
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Starts: 1, Per: time.Second}))
	require.NoError(t, f.q.RemoveLimit(ctx, "mail"))
	limits, err = f.q.Limits(ctx)
	require.NoError(t, err)
	assert.Empty(t, limits)
}

// Jobs of a name whose bucket is empty never hold back the jobs behind them, even while
// no run ends to wake the loop.
func TestAnEmptyBucketDoesNotStallOtherJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 3})
	ctx := testContext(t)
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Starts: 1, Per: time.Hour}))
	var jobs []*job.Job
	for range 5 {
		jobs = append(jobs, f.q.CreateJob(nil).SetName("mail").SetPriority(job.High))
	}
	reports := []*job.Job{f.q.CreateJob(nil).SetName("report"), f.q.CreateJob(nil).SetName("report")}
	events := f.q.Events(ctx, queue.EventCompleted)
	_, err := f.q.AddJob(ctx, append(jobs, reports...)...)
	require.NoError(t, err)
	release := make(chan struct{})
	defer close(release)
	require.NoError(t, f.q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Name == "mail" {
			select { // the one mail the bucket allows runs until the test ends
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, nil
	}))
	start := time.Now()
	waitForAll(t, events, queue.EventCompleted, reports...)
	assert.Less(t, time.Since(start), 5*time.Second, "the reports behind the held-back mails ran at once")
	s, err := f.q.Summary(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, s.Active, "one mail runs: the bucket held one token")
	assert.Equal(t, 4, s.Waiting)
}

// A limit document written by hand without the bucket's fields still limits (a missing
// level counts as a full bucket), and one that cannot be read is ignored without switching
// off the others.
func TestHandWrittenLimitDocuments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{Concurrency: 4})
	ctx := testContext(t)
	require.NoError(t, f.q.SetLimit(ctx, "other", queue.Limit{Starts: 1, Per: time.Hour})) // creates the table
	limits := r.DB(f.db).Table(f.q.Name() + "_limits")
	_, err := limits.Insert([]any{
		map[string]any{"id": "mail", "starts": 2, "per": 3600000},
		map[string]any{"id": "junk", "starts": "many", "from": map[string]any{}},
	}).RunWrite(f.raw)
	require.NoError(t, err)
	got, err := f.q.Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]queue.Limit{"mail": {Starts: 2, Per: time.Hour}, "other": {Starts: 1, Per: time.Hour}}, got)

	var jobs []*job.Job
	for range 4 {
		jobs = append(jobs, f.q.CreateJob(nil).SetName("mail"))
	}
	junk := f.q.CreateJob(nil).SetName("junk")
	events := f.q.Events(ctx, queue.EventCompleted)
	_, err = f.q.AddJob(ctx, append(jobs, junk)...)
	require.NoError(t, err)
	rec := &starts{at: map[string][]time.Time{}}
	require.NoError(t, f.q.Process(rec.handler))
	waitFor(t, events, queue.EventCompleted, junk.ID)
	assert.Never(t, func() bool { return len(rec.of("mail")) > 2 }, time.Second, 50*time.Millisecond,
		"two mails at most: the hand-written bucket was full")
	assert.Len(t, rec.of("mail"), 2)
}

// A processing queue reads the limits in its beats' query: while beats come it sends no
// read of the limits of its own (it did every 5 s), so the periodic queries of N worker
// processes are their beats. A limit set by another queue meanwhile applies.
func TestTheBeatsBringTheLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{MasterInterval: -1})
	ctx := testContext(t)
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Running: 5}))
	w, proxy := faultyQueue(t, f, &queue.Options{MasterInterval: -1, Heartbeat: time.Second, DatabaseInitDelay: -1})
	limitsQueries := proxy.Tally(f.q.Name() + "_limits")
	beats := proxy.Tally(f.q.Name()+"_limits", f.q.Name()+"_workers")
	require.NoError(t, w.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))

	// Past the first beats and the producer's first look; then for more than 5 s.
	require.Eventually(t, func() bool { return beats.Count() >= 4 }, 10*time.Second, 20*time.Millisecond)
	proxy.Reset()
	<-time.After(6 * time.Second)
	assert.GreaterOrEqual(t, beats.Count(), uint64(15), "a beat every 250 ms")
	assert.Equal(t, beats.Count(), limitsQueries.Count(), "no read of the limits but the beats'")

	// A limit set elsewhere is seen by the next beat: its jobs are held back.
	now := time.Now().UTC()
	closed := &queue.Window{From: now.Add(2 * time.Hour).Format("15:04"), To: now.Add(3 * time.Hour).Format("15:04")}
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Window: closed}))
	after := beats.Count()
	require.Eventually(t, func() bool { return beats.Count() >= after+2 }, 10*time.Second, 20*time.Millisecond,
		"a beat that began after the limit was set")
	events := w.Events(ctx, queue.EventCompleted)
	added, err := f.q.AddJob(ctx, f.q.CreateJob(nil).SetName("mail"), f.q.CreateJob(nil).SetName("report"))
	require.NoError(t, err)
	waitFor(t, events, queue.EventCompleted, added[1].ID)
	assert.Equal(t, job.Waiting, f.get(t, added[0].ID).Status, "outside its window")
	assert.Equal(t, beats.Count(), limitsQueries.Count(), "no read of the limits but the beats'")
}
