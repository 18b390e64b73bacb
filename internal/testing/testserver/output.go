package testserver

import (
	"bytes"
	"sync"
)

// logBuf keeps the last part of a server process's output for error messages and notes
// when the wanted line has appeared.
type logBuf struct {
	mu   sync.Mutex
	buf  []byte
	want []byte
	hit  bool
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	l.hit = l.hit || bytes.Contains(l.buf, l.want)
	if n := len(l.buf); n > 64<<10 {
		l.buf = append(l.buf[:0], l.buf[n-32<<10:]...)
	}
	return len(p), nil
}

func (l *logBuf) seen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hit
}

func (l *logBuf) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf)
}

// tail keeps error messages readable when npm, reqlite or the container runner print a lot.
func tail(b []byte) string {
	const keep = 4 << 10
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
