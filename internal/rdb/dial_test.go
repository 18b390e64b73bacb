package rdb

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

func TestDialWithAnEndedContextDoesNotDial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := Dial(ctx, r.ConnectOpts{Address: "127.0.0.1:1"})
	assert.Nil(t, s)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDialReturnsWhenTheContextEnds(t *testing.T) {
	// A listener that accepts and never answers the handshake: the driver's dial hangs.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := Dial(ctx, r.ConnectOpts{Address: l.Addr().String(), Timeout: time.Minute})
	assert.Nil(t, s)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "the dial ends with the context's deadline")
}
