package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

type kindEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

type kindInvoice struct {
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
}

var emailKind = queue.NewKind[kindEmail]("email")

// A job of a Kind runs its handler with its payload; a job added under the kind's name
// with a payload of another type fails its run with ErrDecode, naming the fields the
// kind's type lacks, rather than completing with a zero payload as a lenient decode did.
func TestAKindRefusesAPayloadOfAnotherType(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &queue.Options{JobOptions: &job.Options{RetryMax: job.NoRetries}})
	ctx := testContext(t)
	events := f.q.Events(ctx, queue.EventCompleted, queue.EventTerminated)
	got := make(chan kindEmail, 2)
	mux := queue.NewMux()
	emailKind.Handle(mux, func(_ context.Context, _ *job.Job, e kindEmail) (any, error) {
		got <- e
		return nil, nil
	})
	good := emailKind.Job(f.q, kindEmail{To: "ann@example.com"})
	assert.Equal(t, "email", good.Name)
	typo := f.q.CreateJob(kindInvoice{Customer: "acme", Total: 12}).SetName("email")
	_, err := f.q.AddJob(ctx, good, typo)
	require.NoError(t, err)
	require.NoError(t, f.q.Process(mux.Handler()))

	ended := map[string]queue.Event{}
	for len(ended) < 2 {
		select {
		case e := <-events:
			ended[e.JobID] = e
		case <-ctx.Done():
			t.Fatalf("the jobs did not end: %v", ended)
		}
	}
	assert.Equal(t, queue.EventCompleted, ended[good.ID].Type)
	assert.Equal(t, kindEmail{To: "ann@example.com"}, <-got)
	e := ended[typo.ID]
	assert.Equal(t, queue.EventTerminated, e.Type)
	require.ErrorIs(t, e.Err, queue.ErrDecode)
	assert.Contains(t, e.Err.Error(), "customer, total")
	assert.Len(t, got, 0, "the handler never ran on the other payload")
	assert.Equal(t, job.Terminated, f.get(t, typo.ID).Status)
}

func TestNewKindRefusesAnEmptyName(t *testing.T) {
	assert.Panics(t, func() { queue.NewKind[kindEmail]("") })
	assert.Equal(t, "email", emailKind.New(kindEmail{}, job.Options{Name: "other"}).Name, "the kind's name wins")
}
