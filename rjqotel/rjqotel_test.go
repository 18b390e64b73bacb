package rjqotel

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// attrs are a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func TestASpanPerRun(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mw := Middleware(Options{TracerProvider: tp, Queue: "mail"})
	j := job.New(map[string]any{"to": "ann"}, job.Options{}).SetName("welcome")
	j.ProcessCount, j.RetryCount = 2, 1

	// The handler runs inside the span: its context carries it.
	var inside trace.SpanContext
	_, err := mw(func(ctx context.Context, _ *job.Job) (any, error) {
		inside = trace.SpanContextFromContext(ctx)
		return "sent", nil
	})(context.Background(), j)
	require.NoError(t, err)
	boom := errors.New("the mail server said no")
	_, err = mw(func(context.Context, *job.Job) (any, error) { return nil, boom })(context.Background(), j)
	assert.ErrorIs(t, err, boom, "the handler's error is passed on untouched")
	assert.PanicsWithValue(t, "oops", func() {
		_, _ = mw(func(context.Context, *job.Job) (any, error) { panic("oops") })(context.Background(), j)
	}, "a panic goes on to the queue, which recovers it")

	spans := rec.Ended()
	require.Len(t, spans, 3)
	ok, failed, panicked := spans[0], spans[1], spans[2]
	assert.Equal(t, "rjq.run welcome", ok.Name())
	assert.Equal(t, trace.SpanKindConsumer, ok.SpanKind())
	assert.Equal(t, inside.SpanID(), ok.SpanContext().SpanID())
	a := attrs(ok)
	assert.Equal(t, "mail", a["rjq.queue"].AsString())
	assert.Equal(t, j.ID, a["rjq.job.id"].AsString())
	assert.Equal(t, "welcome", a["rjq.job.name"].AsString())
	assert.Equal(t, int64(2), a["rjq.job.attempt"].AsInt64())
	assert.Equal(t, int64(1), a["rjq.job.retry_count"].AsInt64())
	assert.Equal(t, "completed", a["rjq.job.outcome"].AsString())
	assert.Equal(t, codes.Unset, ok.Status().Code)

	assert.Equal(t, "failed", attrs(failed)["rjq.job.outcome"].AsString())
	assert.Equal(t, codes.Error, failed.Status().Code)
	assert.Equal(t, boom.Error(), failed.Status().Description)
	require.Len(t, failed.Events(), 1, "the error is recorded")
	assert.Equal(t, "exception", failed.Events()[0].Name)

	assert.Equal(t, codes.Error, panicked.Status().Code)
	assert.Equal(t, "panic: oops", panicked.Status().Description)
}

func TestAJobWithoutANameAndTheGlobalProvider(t *testing.T) {
	j := job.New(nil, job.Options{})
	// The global provider is a no-op until one is set: the run goes through untraced.
	res, err := Middleware(Options{})(func(context.Context, *job.Job) (any, error) { return 7, nil })(context.Background(), j)
	require.NoError(t, err)
	assert.Equal(t, 7, res)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, err = Middleware(Options{TracerProvider: tp})(func(context.Context, *job.Job) (any, error) { return nil, nil })(context.Background(), j)
	require.NoError(t, err)
	require.Len(t, rec.Ended(), 1)
	assert.Equal(t, "rjq.run", rec.Ended()[0].Name())
}
