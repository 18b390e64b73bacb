package job

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriorityValues(t *testing.T) {
	// The numbers are the database format shared with the Node.js library.
	tests := []struct {
		p    Priority
		want int
		name string
	}{
		{Highest, 10, "highest"},
		{High, 20, "high"},
		{Medium, 30, "medium"},
		{Normal, 40, "normal"},
		{Low, 50, "low"},
		{Lowest, 60, "lowest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, int(tt.p))
			assert.Equal(t, tt.name, tt.p.String())
			assert.True(t, tt.p.Valid())
		})
	}
}

func TestPriorityStringUnknown(t *testing.T) {
	tests := []struct {
		p    Priority
		want string
	}{
		{0, "Priority(0)"},
		{7, "Priority(7)"},
		{45, "Priority(45)"},
		{-10, "Priority(-10)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.String())
		})
	}
}

func TestPriorityValid(t *testing.T) {
	tests := []struct {
		p    Priority
		want bool
	}{
		{0, false},
		{1, false},
		{9, false},
		{10, true},
		{15, false},
		{40, true},
		{60, true},
		{61, false},
		{70, false},
		{-10, false},
	}
	for _, tt := range tests {
		t.Run(tt.p.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.Valid())
		})
	}
}

func TestParsePriority(t *testing.T) {
	tests := []struct {
		in      string
		want    Priority
		wantErr bool
	}{
		{"highest", Highest, false},
		{"high", High, false},
		{"medium", Medium, false},
		{"normal", Normal, false},
		{"low", Low, false},
		{"lowest", Lowest, false},
		{"HIGH", High, false},
		{"Lowest", Lowest, false},
		{"nOrMaL", Normal, false},
		{"", 0, true},
		{"urgent", 0, true},
		{"40", 0, true},
		{" high", 0, true},
		{"high ", 0, true},
		{"highes", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePriority(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInvalidPriority)
				assert.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), tt.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParsePriorityRoundTripsString(t *testing.T) {
	for _, p := range []Priority{Highest, High, Medium, Normal, Low, Lowest} {
		got, err := ParsePriority(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
}

func TestStatusValid(t *testing.T) {
	tests := []struct {
		s    Status
		want bool
	}{
		{Created, true},
		{Waiting, true},
		{Active, true},
		{Completed, true},
		{Cancelled, true},
		{Failed, true},
		{Terminated, true},
		{"", false},
		{"Active", false},
		{"done", false},
		{"canceled", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.s.Valid())
		})
	}
}

func TestStatusStrings(t *testing.T) {
	// The stored strings are the Node.js library's.
	want := map[Status]string{
		Created: "created", Waiting: "waiting", Active: "active", Completed: "completed",
		Cancelled: "cancelled", Failed: "failed", Terminated: "terminated",
	}
	for s, w := range want {
		assert.Equal(t, w, string(s))
	}
	assert.Equal(t, "information", string(Information))
	assert.Equal(t, "warning", string(Warning))
	assert.Equal(t, "error", string(Error))
}

func TestStatusFinished(t *testing.T) {
	tests := []struct {
		s    Status
		want bool
	}{
		{Created, false},
		{Waiting, false},
		{Active, false},
		{Failed, false},
		{Completed, true},
		{Cancelled, true},
		{Terminated, true},
		{"", false},
		{"bogus", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.s.Finished())
		})
	}
}

func TestErrorsWrapErrInvalid(t *testing.T) {
	for _, err := range []error{
		ErrInvalidID, ErrInvalidName, ErrInvalidPriority, ErrInvalidTimeout, ErrInvalidRetryMax,
		ErrInvalidRetryDelay, ErrInvalidRepeat, ErrInvalidRepeatDelay, ErrInvalidDateEnable,
		ErrInvalidField, ErrInvalidDocument,
	} {
		assert.ErrorIs(t, err, ErrInvalid, err.Error())
	}
	for _, err := range []error{ErrNotAdded, ErrNotActive, ErrNotFound, ErrExists, ErrDetached} {
		assert.False(t, errors.Is(err, ErrInvalid), err.Error())
	}
}
