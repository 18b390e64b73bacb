package wirecount

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// The parser splits the client's side of a connection into the handshake and the query
// frames of the RethinkDB wire protocol, as they pass through the proxy.

// parser states: what the next bytes of the client stream are.
type state int

const (
	stMagic       state = iota // the 4-byte magic number
	stNulMessages              // null-terminated handshake messages (V1_0)
	stAuthKeyLen               // the 4-byte auth key length (V0_3, V0_4)
	stAuthKey                  // the auth key
	stProtocol                 // the 4-byte protocol type (V0_3, V0_4)
	stHeader                   // a frame's token and length
	stBody                     // a frame's JSON
	stOpaque                   // an unknown protocol: forwarded, not parsed
)

// parser follows the client→server stream across reads of any size: a frame may span
// many reads and a read may hold many frames, so it keeps partial fields between feeds.
type parser struct {
	st state
	// fixed collects a fixed-size field (magic, length, header) split over reads.
	fixed [frameHeaderLen]byte
	have  int
	// skip is how many more bytes of the current auth key or body are to come; nuls how
	// many handshake messages have yet to end.
	skip int
	nuls int
	// typ is the current frame's query type, 0 until read; head holds its first body
	// bytes for that.
	typ  int
	head []byte
	// body keeps the whole frame for tallies, when keep is set at the frame's start.
	body []byte
	keep bool
	// wants is asked at each frame's start whether to keep the body.
	wants func() bool
}

// feed parses b, calling done(type, body) for each query frame that b completes.
func (ps *parser) feed(b []byte, done func(typ int, body []byte)) {
	for len(b) > 0 {
		switch ps.st {
		case stMagic, stAuthKeyLen, stProtocol, stHeader:
			need := 4
			if ps.st == stHeader {
				need = frameHeaderLen
			}
			n := copy(ps.fixed[ps.have:need], b)
			ps.have += n
			b = b[n:]
			if ps.have < need {
				return
			}
			ps.have = 0
			ps.fixedDone(done)
		case stNulMessages:
			i := bytes.IndexByte(b, 0)
			if i < 0 {
				return
			}
			b = b[i+1:]
			if ps.nuls--; ps.nuls == 0 {
				ps.st = stHeader
			}
		case stAuthKey:
			n := min(ps.skip, len(b))
			ps.skip -= n
			b = b[n:]
			if ps.skip == 0 {
				ps.st = stProtocol
			}
		case stBody:
			n := min(ps.skip, len(b))
			ps.bodyBytes(b[:n])
			ps.skip -= n
			b = b[n:]
			if ps.skip == 0 {
				ps.frameDone(done)
			}
		case stOpaque:
			return
		}
	}
}

// fixedDone acts on a fixed-size field that has just been read whole.
func (ps *parser) fixedDone(done func(int, []byte)) {
	v := binary.LittleEndian.Uint32(ps.fixed[:4])
	switch ps.st {
	case stMagic:
		switch v {
		case magicV1_0:
			ps.st, ps.nuls = stNulMessages, 2
		case magicV0_4, magicV0_3:
			ps.st = stAuthKeyLen
		default:
			ps.st = stOpaque
		}
	case stAuthKeyLen:
		ps.st, ps.skip = stAuthKey, int(v)
		if ps.skip == 0 {
			ps.st = stProtocol
		}
	case stProtocol:
		ps.st = stHeader
	case stHeader:
		ps.typ, ps.head, ps.body = 0, ps.head[:0], ps.body[:0]
		ps.keep = ps.wants != nil && ps.wants()
		ps.st, ps.skip = stBody, int(binary.LittleEndian.Uint32(ps.fixed[8:12]))
		if ps.skip == 0 {
			ps.frameDone(done)
		}
	}
}

// bodyBytes takes the next bytes of a frame's JSON: the first few tell the query type,
// and all are kept when tallies look for strings in them.
func (ps *parser) bodyBytes(b []byte) {
	if ps.keep {
		ps.body = append(ps.body, b...)
	}
	if ps.typ != 0 {
		return
	}
	// The JSON starts "[<type>," (the driver writes no spaces, but JSON allows them).
	for _, c := range b {
		switch {
		case c == '[' && len(ps.head) == 0:
			ps.head = append(ps.head, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c >= '0' && c <= '9' && len(ps.head) > 0:
			ps.head = append(ps.head, c)
		default:
			if len(ps.head) > 1 {
				ps.typ, _ = strconv.Atoi(string(ps.head[1:]))
			} else {
				ps.typ = -1 // not a query we can read; still a frame
			}
			return
		}
	}
}

// frameDone reports a frame whose bytes have all been read.
func (ps *parser) frameDone(done func(int, []byte)) {
	if ps.typ == 0 && len(ps.head) > 1 { // the type ran to the end of the JSON
		ps.typ, _ = strconv.Atoi(string(ps.head[1:]))
	}
	body := ps.body
	if !ps.keep {
		body = nil
	}
	done(ps.typ, body)
	ps.st = stHeader
	if cap(ps.body) > 1<<20 {
		ps.body = nil // do not hold on to one huge frame's buffer
	}
}
