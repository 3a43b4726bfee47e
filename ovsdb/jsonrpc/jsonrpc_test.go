package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/govs/govs/internal/rawsock"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		in      string
		typ     Type
		wantErr string
	}{
		{`{"method":"list_dbs","params":[],"id":1}`, Request, ""},
		{`{"method":"update","params":[1],"id":null}`, Notification, ""},
		{`{"method":"echo","params":[]}`, Notification, ""},
		{`{"result":{},"error":null,"id":1}`, Reply, ""},
		{`{"error":"x","id":1}`, Error, ""},
		{`{"result":null,"error":"x","id":"a"}`, Error, ""},
		{`[1,2]`, 0, "message is not a JSON object"},
		{`{"method":"x","params":{},"id":1}`, 0, `"params" must be JSON array`},
		{`{"method":"x","id":1}`, 0, `request must have "params"`},
		{`{"method":"x","params":[],"id":1,"x":2}`, 0, `message has unexpected member "x"`},
		{`{"method":5,"params":[],"id":1}`, 0, "method is not a JSON string"},
		{`{"method":null,"params":[],"id":1}`, 0, "method is not a JSON string"},
		{`{"result":[],"method":"m","id":1}`, 0, `reply must not have "method"`},
		{`{"result":1,"error":2,"id":1}`, 0, `reply must not have "error"`},
		{`{"result":1}`, 0, `reply must have "id"`},
		{`{}`, 0, `notification must have "method"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			m, err := ParseMessage([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrProtocol) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Type() != tc.typ {
				t.Fatalf("type %v, want %v", m.Type(), tc.typ)
			}
		})
	}
}

func TestMessageEncoding(t *testing.T) {
	tests := []struct {
		m    *Message
		want string
	}{
		{NewReply(json.RawMessage("1"), []string{"a"}), `{"id":1,"result":["a"],"error":null}`},
		{NewError(json.RawMessage("2"), "unknown method"), `{"id":2,"error":"unknown method"}`},
		{NewNotification("update2", []any{"m", map[string]any{}}), `{"id":null,"method":"update2","params":["m",{}]}`},
		{NewRequest("echo", []any{}, "echo"), `{"id":"echo","method":"echo","params":[]}`},
	}
	for _, tc := range tests {
		if got := string(tc.m.Append(nil)); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
		if _, err := ParseMessage(tc.m.Append(nil)); err != nil {
			t.Errorf("%s does not parse back: %v", tc.want, err)
		}
	}
}

func TestDecoderStream(t *testing.T) {
	stream := `  {"method":"a","params":[1.5e3,-0,true,false,null,"x\"}\u00e9"],"id":1}{"method":"b","params":[{"k":[[]]}],"id":"s"}` +
		"\n" + `{"result":{"a":{}},"error":null,"id":[1]}`
	for _, name := range []string{"whole", "onebyte", "half"} {
		t.Run(name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(stream)
			switch name {
			case "onebyte":
				r = iotest.OneByteReader(r)
			case "half":
				r = iotest.HalfReader(r)
			}
			d := NewDecoder(r, 0)
			var methods []string
			for {
				m, err := d.Decode()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				methods = append(methods, m.Type().String()+":"+m.Method)
			}
			if got := strings.Join(methods, ","); got != "request:a,request:b,reply:" {
				t.Fatalf("got %s", got)
			}
		})
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		in  string
		err error
	}{
		{`{bad}`, ErrProtocol},
		{`{bad`, io.ErrUnexpectedEOF}, // a keyword ends at the byte after it
		{`"str"`, ErrProtocol},
		{`5 `, ErrProtocol},
		{`{"a":tru}`, ErrProtocol},
		{`{"a":01}`, ErrProtocol},
		{`{"a":"\x"}`, ErrProtocol},
		{"{\"a\":\"\x01\"}", ErrProtocol},
		{`{"a":1,}`, ErrProtocol},
		{`{"a" 1}`, ErrProtocol},
		{`{"a":[1 2]}`, ErrProtocol},
		{"{\"a\":\"\xff\"}", ErrProtocol},
		{strings.Repeat("[", 10), io.ErrUnexpectedEOF}, // an array is JSON: the decoder reads it whole
		{strings.Repeat("[", MaxNesting+1), ErrProtocol},
		{`{"a":` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}`, ErrProtocol},
		{`{"a":"` + strings.Repeat("x", 200) + `"}`, ErrTooLarge},
		{`{"a":1`, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		name := tc.in
		if len(name) > 20 {
			name = name[:20]
		}
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tc.in), 100)
			_, err := d.Next()
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// pair returns a Conn served on one end of a socket pair and the raw peer.
func pair(t *testing.T, opts Options, handle func(*Conn, *Message)) (*Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	c := NewConn(a, opts)
	go c.Serve(func(m *Message) { handle(c, m) })
	t.Cleanup(func() { c.Close(); b.Close() })
	return c, b
}

func readMsg(t *testing.T, d *Decoder) *Message {
	t.Helper()
	m, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConnEchoAndHandler(t *testing.T) {
	_, peer := pair(t, Options{Name: "test"}, func(c *Conn, m *Message) {
		if m.Type() == Request {
			c.Send(NewError(m.ID, "unknown method"))
		}
	})
	go peer.Write([]byte(`{"method":"echo","params":["x"],"id":7}{"method":"foo","params":[],"id":8}`))
	d := NewDecoder(peer, 0)
	if m := readMsg(t, d); string(m.Result) != `["x"]` || string(m.ID) != "7" {
		t.Fatalf("echo reply %s", m)
	}
	if m := readMsg(t, d); string(m.Error) != `"unknown method"` || string(m.ID) != "8" {
		t.Fatalf("error reply %s", m)
	}
}

func TestConnClosesOnBadMessage(t *testing.T) {
	c, peer := pair(t, Options{}, func(*Conn, *Message) {})
	go peer.Write([]byte(`{"method":"x","params":{},"id":1}`))
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("connection not closed")
	}
	if !errors.Is(c.Err(), ErrProtocol) {
		t.Fatalf("err %v", c.Err())
	}
}

func TestConnProbe(t *testing.T) {
	// The answer must arrive within one interval of the probe: 1 s, not
	// less, for a loaded machine.
	c, peer := pair(t, Options{ProbeInterval: time.Second}, func(*Conn, *Message) {})
	d := NewDecoder(peer, 0)
	m := readMsg(t, d)
	if m.Method != "echo" || string(m.ID) != `"echo"` {
		t.Fatalf("probe %s", m)
	}
	// Answering keeps the connection up through another probe.
	go peer.Write([]byte(`{"id":"echo","result":[],"error":null}`))
	if m := readMsg(t, d); m.Method != "echo" {
		t.Fatalf("second probe %s", m)
	}
	// Not answering closes it.
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("connection not closed after unanswered probe")
	}
}

func TestConnBacklogLimit(t *testing.T) {
	// Nobody reads the peer, so everything stays queued.
	c, _ := pair(t, Options{MaxBacklog: 1000}, func(*Conn, *Message) {})
	big := NewNotification("update", []string{strings.Repeat("x", 300)})
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		err = c.Send(big)
	}
	if err != ErrClosed {
		t.Fatalf("Send kept succeeding: %v", err)
	}
	<-c.Done()
}

func TestConnOnIdle(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	var c *Conn
	n := 0
	c = NewConn(a, Options{OnIdle: func() {
		if n < 3 {
			n++
			c.Send(NewNotification("tick", []int{n}))
			c.Kick()
		}
	}})
	go c.Serve(func(*Message) {})
	defer c.Close()
	c.Kick()
	d := NewDecoder(b, 0)
	for i := 1; i <= 3; i++ {
		m := readMsg(t, d)
		if m.Method != "tick" || !bytes.Equal(m.Params, []byte("["+string(rune('0'+i))+"]")) {
			t.Fatalf("got %s", m)
		}
	}
}

// decodeAll returns the messages a Decoder reads from r and the error it
// stops at, as text.
func decodeAll(r io.Reader) string {
	d := NewDecoder(r, 1<<16)
	var b strings.Builder
	for {
		raw, err := d.Next()
		if err != nil {
			fmt.Fprintf(&b, "error %v", err)
			return b.String()
		}
		fmt.Fprintf(&b, "%s\n", raw)
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte(`{"method":"transact","params":["Open_vSwitch",{"op":"select","table":"Bridge","where":[]}],"id":1}`))
	f.Add([]byte(`{"id":null,"method":"update2","params":[["m"],{"T":{"u":{"modify":{"a":["set",[1,2.5e-3]]}}}}]}{"result":{},"error":null,"id":"echo"}`))
	f.Add([]byte(`{"a":"\u00e9\\\"","b":[true,false,null,-0.5E+3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The messages and the error do not depend on how the input
		// arrives: all at once (the scanner's fast paths run over long
		// stretches) or a byte at a time.
		whole, bytewise := decodeAll(bytes.NewReader(data)), decodeAll(iotest.OneByteReader(bytes.NewReader(data)))
		if whole != bytewise {
			t.Fatalf("read whole: %s\nread a byte at a time: %s", whole, bytewise)
		}
		d := NewDecoder(iotest.HalfReader(bytes.NewReader(data)), 1<<16)
		for {
			raw, err := d.Next()
			if err != nil {
				return
			}
			// Whatever the scanner accepts must be valid JSON, and
			// a parsed message must survive re-encoding.
			if !json.Valid(raw) {
				t.Fatalf("scanner accepted invalid JSON %q", raw)
			}
			m, err := ParseMessage(raw)
			// The fast member splitter must agree with encoding/json.
			var ref map[string]json.RawMessage
			if json.Unmarshal(raw, &ref) == nil && err == nil {
				for k, v := range map[string]json.RawMessage{"params": m.Params, "result": m.Result, "error": m.Error, "id": m.ID} {
					if r := nonNull(ref[k]); !bytes.Equal(bytes.TrimSpace(r), v) {
						t.Fatalf("%s: split %q, encoding/json %q", k, v, r)
					}
				}
				if len(m.Params) > 0 {
					parts, _ := SplitArray(m.Params)
					var refParts []json.RawMessage
					json.Unmarshal(m.Params, &refParts)
					if len(parts) != len(refParts) {
						t.Fatalf("SplitArray(%s) = %d elements, want %d", m.Params, len(parts), len(refParts))
					}
					for i := range parts {
						if !bytes.Equal(parts[i], bytes.TrimSpace(refParts[i])) {
							t.Fatalf("SplitArray element %d: %q vs %q", i, parts[i], refParts[i])
						}
					}
				}
			}
			if err != nil {
				continue
			}
			m2, err := ParseMessage(m.Append(nil))
			if err != nil || m2.Type() != m.Type() || m2.Method != m.Method {
				t.Fatalf("re-encoding %s: %v", m, err)
			}
		}
	})
}

// TestDecoderStringErrors checks the strings OVS's JSON parser refuses, with
// its texts and positions as Debian's ovsdb-server 3.1 logs them ("error
// parsing stream: line 0, column 36, byte 36: ...") before it drops the
// connection without a reply.
func TestDecoderStringErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"method":"echo","params":["a\u0000b"],"id":1}`, "line 0, column 36, byte 36: null bytes not supported in quoted strings"},
		{`{"method":"echo","params":["a\ud800b"],"id":1}`, "line 0, column 36, byte 36: malformed escaped surrogate pair"},
		{`{"method":"echo","params":["a\ud800\u0041"],"id":1}`, "line 0, column 41, byte 41: second half of escaped surrogate pair is not trailing surrogate"},
		{`{"method":"echo","params":["a\ud800\u0000"],"id":1}`, "line 0, column 41, byte 41: null bytes not supported in quoted strings"},
		{`{"method":"echo","params":["a\ud800\n"],"id":1}`, "line 0, column 37, byte 37: malformed escaped surrogate pair"},
		{"{\"method\":\"echo\",\"params\":[\"a\x01b\"],\"id\":1}", "line 0, column 29, byte 29: U+0001 must be escaped in quoted string"},
		{`{"method":"echo","params":["a\u12"],"id":1}`, "line 0, column 33, byte 33: quoted string ends within \\u escape"},
		{`{"method":"echo","params":["a\u12x\""],"id":1}`, "line 0, column 36, byte 36: malformed \\u escape"},
		{`{"method":"echo","params":["\x"],"id":1}`, "line 0, column 30, byte 30: bad escape \\x"},
		{"{\"method\":\"echo\",\n\"params\":[\"\\u0000\"],\"id\":1}", "line 1, column 17, byte 35: null bytes not supported in quoted strings"},
		{`{"id":1,"params":["\u0000"],`, "line 0, column 25, byte 25: null bytes not supported in quoted strings"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := NewDecoder(iotest.OneByteReader(strings.NewReader(tc.in)), 0).Next()
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// What OVS accepts: pairs, and a lone trailing surrogate (refused
	// later, where a string atom must be UTF-8).
	for _, in := range []string{`{"method":"echo","params":["\ud83d\ude00"],"id":1}`, `{"method":"echo","params":["\udc00"],"id":1}`, `{"method":"echo","params":["\\\u0041\/"],"id":1}`} {
		if _, err := NewDecoder(strings.NewReader(in), 0).Decode(); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// TestConnEchoFloodPausesReading sends echo requests without reading the
// replies. Echo is answered by the connection itself, and used to skip the
// pause in reading that other requests get; a flood then grew the backlog
// until the connection's limit (512 MiB by default). Now reading stops at
// readPauseBacklog for every kind of request, so a limit just above it
// holds, and every reply arrives in order once the peer reads.
func TestConnEchoFloodPausesReading(t *testing.T) {
	const n, size = 100, 64 << 10
	c, peer := pair(t, Options{MaxBacklog: readPauseBacklog + 2*size}, func(*Conn, *Message) {})
	param := strings.Repeat("x", size)
	sent := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := fmt.Fprintf(peer, `{"method":"echo","params":[%q],"id":%d}`, param, i); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	// net.Pipe has no buffer: the flood can only finish if the server keeps
	// reading, and it must stop once its backlog passes the pause.
	waitFor(t, "the backlog to pass the read pause", func() bool { return c.Backlog() > readPauseBacklog })
	d := NewDecoder(peer, 0)
	for i := 0; i < n; i++ {
		m := readMsg(t, d)
		if string(m.ID) != fmt.Sprint(i) || len(m.Result) != size+4 {
			t.Fatalf("reply %d: id %s, %d bytes", i, m.ID, len(m.Result))
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("connection closed: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDecoderBufferBounds checks that the buffer grows no further than one
// byte past the size limit for a message it refuses, and that a large
// buffer is dropped once its message is done, keeping what follows.
func TestDecoderBufferBounds(t *testing.T) {
	const limit = 3 << 20
	big := `{"method":"echo","params":["` + strings.Repeat("x", limit) + `"],"id":1}`
	d := NewDecoder(strings.NewReader(big), limit)
	if _, err := d.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if d.Buffered() > limit+1 {
		t.Errorf("buffer of %d bytes for a limit of %d", d.Buffered(), limit)
	}

	next := `{"method":"echo","params":[2],"id":2}`
	d = NewDecoder(iotest.HalfReader(strings.NewReader(big+next)), 2*limit)
	if m := readMsg(t, d); string(m.ID) != "1" {
		t.Fatalf("first message %s", m.ID)
	}
	if d.Buffered() < limit {
		t.Fatalf("buffer %d smaller than the message", d.Buffered())
	}
	if m := readMsg(t, d); string(m.ID) != "2" {
		t.Fatalf("second message %s", m.ID)
	}
	if d.Buffered() >= LargeBuffer {
		t.Errorf("buffer of %d bytes kept after the large message", d.Buffered())
	}
}

// rawConnPair makes a Conn on one end of a unix socket pair whose send
// buffer is 4 KiB, so that large messages are written in parts, and
// returns it with the other end. The Conn must use raw system calls.
func rawConnPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	c := NewConn(conns[0], Options{})
	if c.raw == nil {
		t.Fatal("no raw conn for a unix socket")
	}
	return c, conns[1]
}

// TestConnSendEncodedNow checks that a message sent from another goroutine
// is written at once when nothing is queued, and that when the socket takes
// only part of it (the peer not reading), the rest is queued ahead of later
// messages and everything arrives in order once the peer reads.
func TestConnSendEncodedNow(t *testing.T) {
	c, peer := rawConnPair(t)
	go c.Serve(func(*Message) {})
	t.Cleanup(func() { c.Close(); peer.Close() })

	small := NewNotification("update", []int{0})
	if err := c.SendEncodedNow(small, small.Append(nil)); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(peer, 0)
	if m := readMsg(t, d); m.Method != "update" || string(m.Params) != "[0]" {
		t.Fatalf("got %s", m)
	}
	// 1 MiB cannot fit in the socket: most of it is queued.
	var want []string
	for i := 1; i <= 3; i++ {
		m := NewNotification("update", []string{strings.Repeat(string(rune('a'+i)), 1<<20)})
		if err := c.SendEncodedNow(m, m.Append(nil)); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(m.Params))
		if i == 1 && c.Idle() {
			t.Fatal("1 MiB written at once into a 4 KiB socket buffer")
		}
	}
	for i, w := range want {
		if m := readMsg(t, d); string(m.Params) != w {
			t.Fatalf("message %d: %.40s..., want %.40s...", i+1, m.Params, w)
		}
	}
}

// TestConnRawSocket runs a connection on a socket, which it reads and
// writes with raw system calls: pipelined requests of every size, replies
// larger than one raw write (rawsock.MaxWrite) to a peer that reads slowly, in
// order, then the peer's close as io.EOF.
func TestConnRawSocket(t *testing.T) {
	c, peer := rawConnPair(t)
	served := make(chan error, 1)
	go func() {
		served <- c.Serve(func(m *Message) {
			c.Send(&Message{Result: m.Params, ID: m.ID})
		})
	}()
	t.Cleanup(func() { c.Close(); peer.Close() })

	sizes := []int{0, 1, 100, 4095, 4096, 70000, rawsock.MaxWrite, rawsock.MaxWrite + 1, 3*rawsock.MaxWrite + 17, 5}
	var reqs []byte
	for i, n := range sizes {
		req := NewRequest("x", []string{strings.Repeat(string(rune('a'+i)), n)}, i)
		reqs = req.Append(reqs)
	}
	go peer.Write(reqs)
	d := NewDecoder(peer, 0)
	for i, n := range sizes {
		m := readMsg(t, d)
		var p []string
		if err := json.Unmarshal(m.Result, &p); err != nil || len(p) != 1 || len(p[0]) != n || string(m.ID) != strconv.Itoa(i) {
			t.Fatalf("reply %d: id %s, %.60s (%d bytes)", i, m.ID, m.Result, len(m.Result))
		}
	}
	peer.Close()
	select {
	case err := <-served:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Serve after the peer's close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the peer's close")
	}
}

// BenchmarkParseRequest: parsing an ovs-vsctl-like transact request takes
// one allocation, the message: names and the method are not copied.
func BenchmarkParseRequest(b *testing.B) {
	raw := []byte(`{"id":17,"method":"transact","params":["Open_vSwitch",{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["k","v"]]]]]},{"op":"comment","comment":"ovs-vsctl set"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if m, err := parseValid(raw); err != nil || m.Method != "transact" {
			b.Fatal(m, err)
		}
	}
}

// TestDecoderErrorTexts: the decoder's errors are OVS's parser's, at its
// positions (tests/ovsdb_parse_errors_test.go compares many more with
// Debian's ovsdb-server): a number or keyword is judged at the byte after
// it, a string at its closing quote.
func TestDecoderErrorTexts(t *testing.T) {
	for in, want := range map[string]string{
		"0 ":             "line 0, column 1, byte 1: syntax error at beginning of input",
		`{1:2}`:          "line 0, column 2, byte 2: syntax error parsing object expecting string",
		`{"a" 1}`:        "line 0, column 6, byte 6: syntax error parsing object expecting ':'",
		`{"a":1 "b":2}`:  "line 0, column 9, byte 9: syntax error expecting '}' or ','",
		`{"a":[1,]}`:     "line 0, column 8, byte 8: syntax error expecting value",
		`{"a":trueX}`:    "line 0, column 10, byte 10: invalid keyword 'trueX'",
		`{"a":01}`:       "line 0, column 7, byte 7: leading zeros not allowed",
		`{"a":1e400}`:    "line 0, column 10, byte 10: number outside valid range",
		"\n {\"a\":@}":   "line 1, column 6, byte 7: invalid character '@'",
		`{"a":"\ud800"}`: "line 0, column 12, byte 12: malformed escaped surrogate pair",
	} {
		_, err := NewDecoder(strings.NewReader(in), 0).Next()
		if err == nil || err.Error() != want || !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
	if _, err := ParseMessage([]byte(`[1]`)); err == nil || err.Error() != "message is not a JSON object" {
		t.Errorf("[1]: %v", err)
	}
}
