package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/wirecount"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// faultyQueue is a queue whose connection runs through a proxy that can lose answers.
func faultyQueue(t *testing.T, f fixture, opts *queue.Options) (*queue.Queue, *wirecount.Proxy) {
	t.Helper()
	proxy, err := wirecount.Start(f.srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	ctx := testContext(t)
	q, err := queue.New(ctx, &queue.ConnectOptions{Host: proxy.Host(), Port: proxy.Port(), DB: f.db}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	require.NoError(t, q.Ready(ctx))
	return q, proxy
}

// runCounter counts a handler's runs per job.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *runCounter) handler(ctx context.Context, j *job.Job) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[j.ID]++
	return "ok", nil
}

// A commit that reached the server but whose answer was lost (a crash or a network cut
// between the write and its answer): its outcomes are written again without being applied
// twice, each completion is raised once, and the jobs it claimed are found and run once.
// (rethinkdb-go sends a query again on a new connection after a connection error, so the
// second try meets the first one's effects.)
func TestLostAnswersNeitherLoseNorRepeatWork(t *testing.T) {
	if raceDetector {
		// Seen three times (two CI logs, one local run), in its claim case: turning
		// heartbeats off, below, did not keep the producer and the completer from
		// redialling at once.
		t.Skip("the lost answer makes the producer and the completer redial at once, which meets the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	for name, marker := range map[string]string{
		"outcome write": `"dateFinished"`,
		"claim":         job.MessageActive,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
			// No heartbeats: two goroutines redialling at once after a lost answer meet the
			// driver's own data race (rethinkdb/rethinkdb-go#488).
			q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true, Heartbeat: -1}))
			jobs := make([]*job.Job, 4)
			for i := range jobs {
				jobs[i] = q.CreateJob(i)
			}
			_, err := q.AddJob(testContext(t), jobs...)
			require.NoError(t, err)
			events := q.Events(testContext(t), queue.EventCompleted)
			proxy.LoseAnswers(1, marker)
			sent := proxy.Tally(marker)
			c := &runCounter{runs: map[string]int{}}
			require.NoError(t, q.Process(c.handler))
			waitForAll(t, events, queue.EventCompleted, jobs...)
			for _, j := range jobs {
				got := f.get(t, j.ID)
				assert.Equal(t, job.Completed, got.Status)
				completions := 0
				for _, e := range got.Log {
					if e.Message == job.MessageCompleted {
						completions++
					}
				}
				assert.Equal(t, 1, completions, "job %s: one completion entry", j.ID)
				c.mu.Lock()
				assert.Equal(t, 1, c.runs[j.ID], "job %s: ran once", j.ID)
				c.mu.Unlock()
			}
			assert.GreaterOrEqual(t, sent.Count(), uint64(2), "the write whose answer was lost was looked into or sent again")
			require.NoError(t, q.Stop(testContext(t)))
			close := 0
			for e := range events {
				if e.Type == queue.EventCompleted {
					close++
				}
			}
			assert.Zero(t, close, "no completion raised twice")
		})
	}
}

// A claim that the server runs only after the queue gave it up (a server too busy to
// answer before the round's timeout) is not lost: the queue looks for it again until the
// lease it would hold ends, and runs the job once it finds it, with no Queue Master to
// review it. Before, it looked once, found nothing yet, and the job stayed active in its
// name until a review (seen with 8 queues of concurrency 50 on one server).
func TestAClaimThatLandsAfterItWasGivenUpRunsItsJob(t *testing.T) {
	if raceDetector {
		t.Skip("the timed-out claim makes the producer and the heartbeat redial at once, which meets the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	// Heartbeats of 2 s: a round gives a claim up after 1 s, and its lease lasts 3 s.
	q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true, Heartbeat: 2 * time.Second}))
	j := q.CreateJob("late")
	_, err := q.AddJob(testContext(t), j)
	require.NoError(t, err)
	events := q.Events(testContext(t), queue.EventCompleted)
	// The claim lands 1.5 s after it was sent, half a second after the queue gave it up
	// and looked for it; the next read of the table (given up too) comes after it landed,
	// so the queue never sees the job waiting again.
	claims := proxy.Tally(job.MessageActive)
	proxy.LandLate(1500*time.Millisecond, job.MessageActive)
	c := &runCounter{runs: map[string]int{}}
	require.NoError(t, q.Process(c.handler))
	require.Eventually(t, func() bool { return claims.Count() > 0 }, 10*time.Second, time.Millisecond)
	proxy.LandLate(2*time.Second, rdb.IndexClaim)
	waitFor(t, events, queue.EventCompleted, j.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, 1, c.runs[j.ID], "ran once")
}

// An AddJob whose insert landed but whose answer was lost succeeds: the try the driver
// sends again finds the call's own documents, not another writer's.
func TestAddJobWithALostAnswerSucceeds(t *testing.T) {
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true}))
	proxy.LoseAnswers(1, job.MessageAdded)
	jobs := []*job.Job{q.CreateJob(1), q.CreateJob(2)}
	added, err := q.AddJob(testContext(t), jobs...)
	require.NoError(t, err)
	assert.Len(t, added, 2)
	assert.Equal(t, 2, f.count(t))
}

// Writes are sent without the queries' read mode (majority by default), which a write on
// the primary does not need and which makes the server consult every replica first;
// reads keep it. (A claim may carry a read of the claim index's head, whose table is read
// "outdated", as every read that only proposes candidates: not the queries' mode.)
func TestWritesGoWithoutTheReadModeAndReadsWithIt(t *testing.T) {
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true}))
	mode := `"read_mode":"majority"`
	claims, claimsWithMode := proxy.Tally(job.MessageActive), proxy.Tally(job.MessageActive, mode)
	outcomes, outcomesWithMode := proxy.Tally(`"dateFinished"`), proxy.Tally(`"dateFinished"`, mode)
	reads := proxy.Tally(`"read_mode":"majority"`)
	jobs := make([]*job.Job, 3)
	for i := range jobs {
		jobs[i] = q.CreateJob(i)
	}
	ctx := testContext(t)
	events := q.Events(ctx, queue.EventCompleted)
	_, err := q.AddJob(ctx, jobs...)
	require.NoError(t, err)
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) { return nil, nil }))
	waitForAll(t, events, queue.EventCompleted, jobs...)
	got, err := q.GetJob(ctx, jobs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, job.Completed, got[0].Status)

	assert.NotZero(t, claims.Count(), "claims were sent")
	assert.Zero(t, claimsWithMode.Count(), "claims carry no read mode")
	assert.NotZero(t, outcomes.Count(), "outcomes were written")
	assert.Zero(t, outcomesWithMode.Count(), "outcome writes carry no read mode")
	assert.NotZero(t, reads.Count(), "reads (GetJob) keep the read mode")
}

// A lost outcome answer, through the wire: a run's failed outcome lands but its answer is
// lost, so the completer writes it again; before it can, the job (due again at once) is
// claimed again and its second run succeeds. The retried write finds the first outcome
// landed, and must still write the second: the job ends completed, its completion raised
// once, well within the run's lease (no Queue Master runs here to mend anything).
func TestALandedOutcomeIsNotTakenForTheNextRunsOutcome(t *testing.T) {
	if raceDetector {
		t.Skip("the lost answer makes the producer and the completer redial at once, which meets the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	failures := &messageCounter{Handler: slog.DiscardHandler, msg: "writing outcomes failed"}
	q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true, Heartbeat: -1,
		Logger: slog.New(failures)}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // two backoffs of 30 s may come
	t.Cleanup(cancel)
	j := q.CreateJob(nil).SetRetryMax(3).SetRetryDelay(0)
	_, err := q.AddJob(ctx, j)
	require.NoError(t, err)
	events := q.Events(ctx, queue.EventCompleted)

	const outcomeWrite = `"dateFinished"` // in outcome writes and in the read of their stamps
	proxy.LoseAnswers(1, outcomeWrite)    // the first run's outcome lands; its answer is lost
	proxy.LoseAnswers(1000, outcomeWrite) // and no retry gets through until the second run ends
	secondDone := make(chan int64, 1)
	var runs atomic.Int32
	require.NoError(t, q.Process(func(context.Context, *job.Job) (any, error) {
		if runs.Add(1) == 1 {
			return nil, errors.New("first run fails")
		}
		secondDone <- failures.n.Load()
		return "second run", nil
	}))
	var before int64
	select {
	case before = <-secondDone:
	case <-ctx.Done():
		t.Fatal("the job was not claimed again after its failed outcome landed")
	}
	// The completer's tries are one at a time, a backoff apart: once one more has failed,
	// the second run's outcome (added microseconds after its handler returned) is queued
	// beside the first's, and the next try carries both. The backoff doubles up to 30 s
	// (maxWriteBackoff): on a loaded machine the second run can come late enough that the
	// next try, and the one after the faults are cleared, are that far apart.
	require.Eventually(t, func() bool { return failures.n.Load() > before }, 40*time.Second, time.Millisecond)
	proxy.ClearFaults()

	var e queue.Event
	deadline := time.After(40 * time.Second)
	for e.JobID != j.ID {
		select {
		case e = <-events:
		case <-deadline:
			t.Fatal("no completed event 40 s after the faults were cleared")
		}
	}
	assert.True(t, e.Local)
	require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Completed }, 5*time.Second, 20*time.Millisecond,
		"the second run's outcome is in the table, not only its event")
	got := f.get(t, j.ID)
	assert.Equal(t, 2, got.ProcessCount)
	var result string
	require.NoError(t, got.Result(&result))
	assert.Equal(t, "second run", result)
	assert.Equal(t, int32(2), runs.Load())
}

// messageCounter counts the log records with one message.
type messageCounter struct {
	slog.Handler
	msg string
	n   atomic.Int64
}

func (h *messageCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *messageCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}

func (h *messageCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *messageCounter) WithGroup(string) slog.Handler      { return h }

// A connection loss shorter than the lease, right after handlers
// return, costs no second run. The worker's outcome writes fail for half a lease (every
// connection reset and refused, or silent); the runs' leases must be renewed while their
// outcomes wait, and the retries must not wait past the leases' end, so that the Queue
// Master (on a connection of its own, checking leases every Heartbeat/4) never takes a
// finished run for a dead one.
func TestAnOutageShorterThanTheLeaseCostsNoSecondRun(t *testing.T) {
	if raceDetector {
		t.Skip("redials from several goroutines at once meet the driver's data race (rethinkdb/rethinkdb-go#488); run without -race (CI does)")
	}
	const heartbeat = 2 * time.Second
	lease := heartbeat + time.Second
	for name, fault := range map[string]func(*wirecount.Proxy, time.Duration){
		"connections reset and refused": (*wirecount.Proxy).Partition,
		"connections silent":            (*wirecount.Proxy).Blackhole,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &queue.Options{MasterInterval: time.Hour, Heartbeat: heartbeat})
			q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true,
				Heartbeat: heartbeat, Concurrency: 4}))
			ctx := testContext(t)
			jobs := f.add(t, 4)
			var mu sync.Mutex
			runs := map[string]int{}
			started := make(chan struct{}, len(jobs))
			release := make(chan struct{})
			require.NoError(t, q.Process(func(_ context.Context, j *job.Job) (any, error) {
				mu.Lock()
				runs[j.ID]++
				mu.Unlock()
				started <- struct{}{}
				<-release
				return "ok", nil
			}))
			for range jobs {
				select {
				case <-started:
				case <-ctx.Done():
					t.Fatal("the jobs did not start")
				}
			}
			// Past the first renewal, as a run of some length would be.
			require.Eventually(t, func() bool {
				return f.get(t, jobs[0].ID).DateEnable.After(time.Now().Add(lease - heartbeat/2))
			}, 2*heartbeat, 20*time.Millisecond, "the leases were renewed")
			fault(proxy, lease/2)
			faultAt := time.Now()
			close(release)

			for _, j := range jobs {
				require.Eventually(t, func() bool { return f.get(t, j.ID).Status == job.Completed }, 3*lease, 20*time.Millisecond,
					"job %s completed", j.ID)
			}
			t.Logf("completed %v after the fault began", time.Since(faultAt).Round(time.Millisecond))
			mu.Lock()
			defer mu.Unlock()
			for _, j := range jobs {
				assert.Equal(t, 1, runs[j.ID], "job %s ran once", j.ID)
				got := f.get(t, j.ID)
				assert.Equal(t, 1, got.ProcessCount, "job %s claimed once", j.ID)
				for _, e := range got.Log {
					assert.NotEqual(t, "Master: "+job.MessageFailed, e.Message, "job %s was failed by the Master", j.ID)
				}
			}
		})
	}
}
