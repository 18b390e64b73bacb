package exposition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const good = `# HELP runs_total Runs.
# TYPE runs_total counter
runs_total{queue="q",status="completed"} 3
runs_total{status="failed",queue="q"} 1
# a free comment
# HELP took_seconds Durations.
# TYPE took_seconds histogram
took_seconds_bucket{queue="q",le="0.5"} 1
took_seconds_bucket{queue="q",le="1"} 2
took_seconds_bucket{queue="q",le="+Inf"} 4
took_seconds_sum{queue="q"} 7.5
took_seconds_count{queue="q"} 4
# HELP empty_total Nothing yet.
# TYPE empty_total counter
`

func TestAGoodScrapePasses(t *testing.T) {
	samples, err := Check(good)
	require.NoError(t, err)
	assert.Len(t, samples, 7)
	assert.Equal(t, `runs_total{queue="q",status="failed"}`, samples[1].Series(), "labels sorted")
	assert.Equal(t, 1.0, samples[1].Value)
}

func TestEachBreachIsFound(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"a series twice", "# HELP a_total A.\n# TYPE a_total counter\na_total{q=\"x\",s=\"y\"} 1\na_total{s=\"y\",q=\"x\"} 2\n", "appears more than once"},
		{"no TYPE", "# HELP a_total A.\na_total 1\n", "no TYPE before it"},
		{"no HELP", "# TYPE a_total counter\na_total 1\n", "has 0 HELP and 1 TYPE"},
		{"two HELPs", "# HELP a_total A.\n# HELP a_total A.\n# TYPE a_total counter\na_total 1\n", "has 2 HELP"},
		{"HELP after the samples", "# TYPE a_total counter\na_total 1\n# HELP a_total A.\n", "HELP after its samples"},
		{"TYPE after the samples", "# HELP a_total A.\na_total 1\n# TYPE a_total counter\n", "TYPE of a_total after its samples"},
		{"samples apart", "# HELP a_total A.\n# TYPE a_total counter\n# HELP b_total B.\n# TYPE b_total counter\na_total{x=\"1\"} 1\nb_total 1\na_total{x=\"2\"} 1\n", "not together"},
		{"buckets not cumulative", "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n", "cumulative"},
		{"+Inf differs from count", "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n", "differs from _count"},
		{"no +Inf", "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "no +Inf bucket"},
		{"no sum", "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", "no _sum"},
		{"bad value", "# HELP a_total A.\n# TYPE a_total counter\na_total x\n", "not a number"},
		{"bad labels", "# HELP a_total A.\n# TYPE a_total counter\na_total{q=x} 1\n", `want name="value"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(tt.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLabelValuesUnescape(t *testing.T) {
	samples, err := Check("# HELP a_total A.\n# TYPE a_total counter\na_total{q=\"a\\\"b\\\\c\\nd\",r=\"{},\"} 1\n")
	require.NoError(t, err)
	require.Len(t, samples, 1)
	assert.Equal(t, "a\"b\\c\nd", samples[0].Labels["q"])
	assert.Equal(t, "{},", samples[0].Labels["r"])
}
