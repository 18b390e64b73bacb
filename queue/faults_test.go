package queue_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
// reads keep it.
func TestWritesGoWithoutTheReadModeAndReadsWithIt(t *testing.T) {
	f := newFixture(t, &queue.Options{MasterInterval: -1, NoChangeFeed: true})
	q, proxy := faultyQueue(t, f, queuetest.Options(queue.Options{MasterInterval: -1, NoChangeFeed: true}))
	mode := `"read_mode"`
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
