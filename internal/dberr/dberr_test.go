package dberr

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

func TestFrom(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	long := errors.New("rethinkdb: Cannot perform write: lost contact with primary replica in:\nr.DB(\"x\").Table(\"y\")" + string(make([]byte, 10000)))
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want string
		is   error
	}{
		{"nil", context.Background(), nil, "", nil},
		{"query cut off", context.Background(), long, "rethinkdb: Cannot perform write: lost contact with primary replica", long},
		{"timeout of an ended context", cancelled, r.ErrQueryTimeout, "context canceled", context.Canceled},
		{"timeout of a live context", context.Background(), r.ErrQueryTimeout, "rethinkdb: query timeout", r.ErrQueryTimeout},
		{"plain", context.Background(), errors.New("x"), "x", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := From(tc.ctx, tc.err)
			if tc.err == nil {
				assert.NoError(t, got)
				return
			}
			assert.Equal(t, tc.want, got.Error())
			if tc.is != nil {
				assert.ErrorIs(t, got, tc.is)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	assert.True(t, Transient(errors.New("rethinkdb: Cannot perform write: lost contact with primary replica")))
	assert.True(t, Transient(r.ErrConnectionClosed))
	assert.True(t, Transient(errors.New("rethinkdb: EOF")))
	assert.False(t, Transient(errors.New("rethinkdb: Table `x.y` does not exist")))
	assert.False(t, Transient(context.Canceled))
	assert.False(t, Transient(nil))
}
