package ofp

import "encoding/binary"

// NXT_RESUME and the continuation a paused packet-in carries (OVS's
// NXPINT_CONTINUATION with its NXCPT_* properties).
const (
	nxtResume          = 28
	nxpintBufferID     = 2
	nxpintContinuation = 8

	nxcptBridge = 0x8000 + iota - 3
	nxcptStack
	nxcptMirrors
	nxcptConntracked
	nxcptTableID
	nxcptCookie
	nxcptActions
	nxcptActionSet
	nxcptOdpPort
	// nxcptGovsStack is govs' own: the push/pop stack as govs keeps
	// it (16 bytes an entry), which OVS's NXCPT_STACK does not hold.
	nxcptGovsStack = 0x80ff
)

// Continuation is what a translation paused by controller(pause) needs
// to go on: the bridge (a random identity of this run of it), the table
// and cookie of the rule, the actions left and the push/pop stack.
// Registers, metadata and conntrack fields travel in the packet-in's
// metadata, which NXT_RESUME sends back.
type Continuation struct {
	Bridge  [16]byte
	TableID uint8
	Cookie  uint64
	Actions []Action
	Stack   []byte
}

// appendContinuation appends c as NXPINT_CONTINUATION, its actions
// encoded for version v.
func appendContinuation(b []byte, v Version, c *Continuation) []byte {
	start := len(b)
	b = put16(b, nxpintContinuation)
	b = put16(b, 0)
	b = pad(b, 4)
	b = appendProp(b, nxcptBridge, c.Bridge[:])
	if len(c.Stack) > 0 {
		b = appendProp(b, nxcptGovsStack, c.Stack)
	}
	b = appendProp(b, nxcptTableID, []byte{c.TableID})
	b = appendProp(b, nxcptCookie, append(make([]byte, 4), binary.BigEndian.AppendUint64(nil, c.Cookie)...))
	if len(c.Actions) > 0 {
		as := len(b)
		b = put16(b, nxcptActions)
		b = put16(b, 0)
		b = pad(b, 4)
		b = AppendActions(b, v, c.Actions)
		binary.BigEndian.PutUint16(b[as+2:], uint16(len(b)-as))
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// Resume is NXT_RESUME: a paused packet, possibly changed by the
// controller, with its metadata and the continuation to go on with
// (nil when the message carries none).
type Resume struct {
	Header
	Data         []byte
	Metadata     Match
	Continuation *Continuation
}

const resumeName = "NXT_RESUME"

// props splits b into OpenFlow properties padded to 8 bytes, calling f
// with each type and value; errors are OVS's ofpprop_pull's.
func props(name string, b []byte, f func(typ uint16, val []byte) *Error) *Error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errorf(BadAsyncLen, name, "truncated property")
		}
		typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if n < 4 || (n+7)&^7 > len(b) {
			return errorf(BadAsyncLen, name, "property of %d bytes", n)
		}
		if err := f(typ, b[4:n]); err != nil {
			return err
		}
		b = b[(n+7)&^7:]
	}
	return nil
}

// decodeResume decodes NXT_RESUME's properties (rest: after the subtype),
// as OVS's ofputil_decode_packet_in_private, strictly.
func decodeResume(h Header, rest []byte) (Message, error) {
	r := &Resume{Header: h}
	err := props(resumeName, rest, func(typ uint16, val []byte) *Error {
		switch typ {
		case nxpintPacket:
			r.Data = append([]byte(nil), val...)
		case nxpintFullLen, nxpintBufferID:
			if len(val) != 4 {
				return errorf(BadAsyncLen, resumeName, "property %d of %d bytes", typ, len(val))
			}
			if typ == nxpintBufferID && binary.BigEndian.Uint32(val) != NoBuffer {
				return errorf(BufferUnknown, resumeName, "no buffered packets")
			}
		case nxpintTableID, nxpintReason:
			if len(val) != 1 {
				return errorf(BadAsyncLen, resumeName, "property %d of %d bytes", typ, len(val))
			}
		case nxpintCookie:
			if len(val) != 12 {
				return errorf(BadAsyncLen, resumeName, "cookie of %d bytes", len(val))
			}
		case nxpintUserdata:
		case nxpintMetadata:
			m, err := DecodeNXMatch(val)
			if err != nil {
				return err
			}
			r.Metadata = m
		case nxpintContinuation:
			if len(val) < 4 {
				return errorf(BadAsyncLen, resumeName, "continuation of %d bytes", len(val))
			}
			c, err := decodeContinuation(h.Version, val[4:])
			if err != nil {
				return err
			}
			r.Continuation = c
		default:
			return errorf(BadAsyncProp, resumeName, "property type %d", typ)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// decodeContinuation decodes the NXCPT_* properties of a continuation.
func decodeContinuation(v Version, b []byte) (*Continuation, *Error) {
	c := &Continuation{}
	err := props(resumeName, b, func(typ uint16, val []byte) *Error {
		switch typ {
		case nxcptBridge:
			if len(val) != 16 {
				return errorf(BadAsyncLen, resumeName, "bridge of %d bytes", len(val))
			}
			copy(c.Bridge[:], val)
		case nxcptGovsStack:
			if len(val)%16 != 0 {
				return errorf(BadAsyncLen, resumeName, "stack of %d bytes", len(val))
			}
			c.Stack = append([]byte(nil), val...)
		case nxcptTableID:
			if len(val) != 1 {
				return errorf(BadAsyncLen, resumeName, "table_id of %d bytes", len(val))
			}
			c.TableID = val[0]
		case nxcptCookie:
			if len(val) != 12 {
				return errorf(BadAsyncLen, resumeName, "cookie of %d bytes", len(val))
			}
			c.Cookie = binary.BigEndian.Uint64(val[4:])
		case nxcptActions:
			if len(val) < 4 {
				return errorf(BadAsyncLen, resumeName, "actions of %d bytes", len(val))
			}
			acts, err := DecodeActions(v, val[4:])
			if err != nil {
				return err
			}
			c.Actions = acts
		default:
			// OVS's stack, mirrors, conntracked, action set and
			// datapath port: govs never sends them.
			return errorf(BadAsyncProp, resumeName, "continuation property type %#x", typ)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
