package rjqtest_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqtest"
)

// invoice is a parent's result in the tests: stored by its json names, as a queue stores
// results.
type invoice struct {
	Number int     `json:"number"`
	Total  float64 `json:"total"`
}

// A workflow child runs as released: ParentResult decodes the result given for each
// parent, stored as a queue stores it (by json names); a parent given none completed
// with none; the log holds the release between the add and the claim.
func TestAChildReadsItsParentsResults(t *testing.T) {
	billing, shipping, audit := uuid.NewString(), uuid.NewString(), uuid.NewString()
	type read struct {
		Invoice  invoice
		Raw      map[string]any
		Shipping string
		AuditErr error
		Audit    string
	}
	var got read
	h := func(_ context.Context, j *job.Job) (any, error) {
		if err := j.ParentResult(billing, &got.Invoice); err != nil {
			return nil, err
		}
		if err := j.ParentResult(billing, &got.Raw); err != nil {
			return nil, err
		}
		if err := j.ParentResult(shipping, &got.Shipping); err != nil {
			return nil, err
		}
		got.AuditErr = j.ParentResult(audit, &got.Audit)
		return "sent", nil
	}
	child := job.New("notify", job.Options{}).SetDependsOn(billing, shipping, audit)
	res := run(t, h, child,
		rjqtest.WithParentResult(billing, invoice{Number: 7, Total: 12.5}),
		rjqtest.WithParentResult(shipping, "tracking 42"))
	require.NoError(t, res.Err)
	assert.Equal(t, rjqtest.Completed, res.Outcome)
	assert.Equal(t, invoice{Number: 7, Total: 12.5}, got.Invoice)
	assert.Equal(t, map[string]any{"number": 7.0, "total": 12.5}, got.Raw, "stored by json names")
	assert.Equal(t, "tracking 42", got.Shipping)
	assert.NoError(t, got.AuditErr, "a parent given no result completed with none")
	assert.Empty(t, got.Audit)
	assert.Equal(t, []string{job.MessageAddedBlocked, job.MessageReleased, job.MessageActive, job.MessageCompleted}, messages(res.Job.Log),
		"the log AddJob and a release write")
	assert.Equal(t, job.Blocked, res.Job.Log[0].Status, "added blocked")

	var again invoice
	require.NoError(t, res.Job.ParentResult(billing, &again), "the job as left carries them")
	assert.Equal(t, 7, again.Number)
	assert.Empty(t, child.Fields["rjqParentResults"], "the job given is not changed")
}

// A parent's result that cannot be stored reaches the child as the queue's does: the
// parent completed, and ParentResult says its result was not stored.
func TestAParentResultThatCannotBeStored(t *testing.T) {
	p := uuid.NewString()
	var err error
	h := func(_ context.Context, j *job.Job) (any, error) {
		var v any
		err = j.ParentResult(p, &v)
		return nil, nil
	}
	run(t, h, job.New(nil, job.Options{}).SetDependsOn(p), rjqtest.WithParentResult(p, func() {}))
	assert.ErrorIs(t, err, job.ErrResultNotStored)
}

// Run refuses the parents AddJob refuses, with AddJob's errors, and results given for a
// job that is not a parent.
func TestRunRefusesBadParents(t *testing.T) {
	p := uuid.NewString()
	withField := func(v any) *job.Job {
		j := job.New(nil, job.Options{})
		j.Fields = map[string]any{"rjqDependsOn": v}
		return j
	}
	self := job.New(nil, job.Options{}).SetDependsOn(job.UniqueID("k")).SetUniqueKey("k")
	cases := []struct {
		name string
		j    *job.Job
		opts []rjqtest.Option
		is   []error
		says string
	}{
		{"not a job id", job.New(nil, job.Options{}).SetDependsOn("not-a-uuid"), nil,
			[]error{job.ErrInvalidDependsOn, job.ErrInvalidID, job.ErrInvalid}, "not a job id"},
		{"not a job id, by hand", withField([]any{"p1"}), nil, []error{job.ErrInvalidDependsOn, job.ErrInvalidID}, "not a job id"},
		{"twice, by hand", withField([]any{p, p}), nil, []error{job.ErrInvalidDependsOn}, "twice"},
		{"itself, through its unique key", self, nil, []error{job.ErrInvalidDependsOn}, "itself"},
		{"a result for a job that is not a parent", job.New(nil, job.Options{}).SetDependsOn(p),
			[]rjqtest.Option{rjqtest.WithParentResult(uuid.NewString(), 1)}, []error{job.ErrNotParent, queue.ErrInvalidOption}, "not a parent"},
		{"a result for a job without parents", job.New(nil, job.Options{}),
			[]rjqtest.Option{rjqtest.WithParentResult(p, 1)}, []error{job.ErrNotParent}, "has no parents"},
		{"a deadline its debounce passes", job.New(nil, job.Options{}).SetUniqueKey("d").SetDebounce(time.Hour).SetDeadline(time.Now().Add(time.Minute)),
			nil, []error{job.ErrInvalidDeadline}, "could never start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := rjqtest.Run(t.Context(), returns(nil, nil), c.j, c.opts...)
			require.Error(t, err)
			assert.Nil(t, res)
			for _, is := range c.is {
				assert.ErrorIs(t, err, is)
			}
			assert.Contains(t, err.Error(), c.says)
			want := queue.CheckJobs(c.j)
			if c.opts == nil {
				require.Error(t, want, "AddJob refuses it too")
				assert.True(t, strings.HasSuffix(untimed(err.Error()), untimed(want.Error())), "with AddJob's error: %v", err)
			}
		})
	}
}

// untimed replaces the times in an error's text, which the two checks compute a few
// milliseconds apart.
func untimed(s string) string {
	return timeInText.ReplaceAllString(s, "<time>")
}

var timeInText = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)

func messages(log []job.LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Message
	}
	return out
}

// A child run by Run with its parent's result given is left as a queue leaves the child
// its parent's completion released: same log, same outcome, same result.
func TestRunAgreesWithAQueueOnAChild(t *testing.T) {
	parentHandler := returns(invoice{Number: 7, Total: 12.5}, nil)
	childHandler := func(_ context.Context, j *job.Job) (any, error) {
		var inv invoice
		if err := j.ParentResult(j.DependsOn()[0], &inv); err != nil {
			return nil, err
		}
		return inv.Total * 2, nil
	}
	srv := testserver.Get(t)
	q, err := queue.New(t.Context(), queuetest.ConnectTo(srv, testserver.DB(t)), queuetest.Options(queue.Options{Concurrency: 2}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	require.NoError(t, q.Ready(t.Context()))
	require.NoError(t, q.Process(func(ctx context.Context, j *job.Job) (any, error) {
		if j.Name == "bill" {
			return parentHandler(ctx, j)
		}
		return childHandler(ctx, j)
	}))
	parent := q.CreateJob(nil).SetName("bill")
	child := q.CreateJob(nil).SetName("notify").SetDependsOn(parent.ID)
	rjqtest.RequireAdded(t, q, parent, child)
	inQueue := rjqtest.RequireCompleted(t, q, child.ID, 30*time.Second)

	_, err = rjqtest.Run(t.Context(), childHandler, job.New(nil, job.Options{Name: "notify"}).SetDependsOn(uuid.NewString()),
		rjqtest.WithParentResult(parent.ID, invoice{Number: 7, Total: 12.5}))
	require.Error(t, err, "a result for another id")
	res, err := rjqtest.Run(t.Context(), childHandler, job.New(nil, job.Options{Name: "notify"}).SetDependsOn(parent.ID),
		rjqtest.WithParentResult(parent.ID, invoice{Number: 7, Total: 12.5}))
	require.NoError(t, err)
	assert.Equal(t, shapeOf(inQueue), shapeOf(res.Job))
	var want, got float64
	require.NoError(t, inQueue.Result(&want))
	require.NoError(t, res.Job.Result(&got))
	assert.Equal(t, 25.0, got)
	assert.Equal(t, want, got)
	assert.Equal(t, inQueue.Fields["rjqParentResults"], res.Job.Fields["rjqParentResults"], "the child carries the same")
}

// A job released already (read from a queue, waiting) keeps the results it carries, but
// for the parents given.
func TestAReleasedChildKeepsWhatItCarries(t *testing.T) {
	a, b := uuid.NewString(), uuid.NewString()
	j := job.New(nil, job.Options{}).SetDependsOn(a, b)
	j.Status = job.Waiting
	j.Fields["rjqParentResults"] = map[string]any{a: map[string]any{"data": "from a"}, b: map[string]any{"data": "from b"}}
	got := map[string]string{}
	h := func(_ context.Context, j *job.Job) (any, error) {
		for _, p := range []string{a, b} {
			var v string
			if err := j.ParentResult(p, &v); err != nil {
				return nil, err
			}
			got[p] = v
		}
		return nil, nil
	}
	res := run(t, h, j, rjqtest.WithParentResult(b, "given"))
	require.NoError(t, res.Err)
	assert.Equal(t, map[string]string{a: "from a", b: "given"}, got)
}
