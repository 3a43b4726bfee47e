package tests

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ovsdbStreamErrRe matches the warning a server logs when a client's
// stream is not JSON-RPC, with the connection's name: unix#N, N counting
// the process's unix socket connections from 0, unixctl's too, as OVS's
// punix_accept does.
var ovsdbStreamErrRe = regexp.MustCompile(`\|jsonrpc\|WARN\|(unix#\d+: (error parsing stream|received bad JSON-RPC message): .*)`)

// ovsdbBadStreams are streams each of which makes both servers log a
// warning and drop the connection: values other than an object, every
// kind of token where the parser expects another, numbers and keywords
// and strings that do not lex, and whitespace before the message.
var ovsdbBadStreams = []string{
	"0 ", "-1 ", `"s" `, "true ", "} ", ": ", "x ", "[1] ", "\xff ", "\n\n  {\"a\" 1}",
	`{"a" 1}`, `{"a":}`, `{1:2}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":[1 2]}`, `{"a":[1,]}`, `{,}`,
	`{"a":1]`, `{"a":[1}`, `{"a":[]]`, `{"a":[true false]}`, `{"a" :"b"  x}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":TRUE}`, `{"a":trueX}`, `{"a":+1}`, `{"a":@}`,
	`{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":1E+}`, `{"a":-}`, `{"a":1-2}`, `{"a":1.2.3}`,
	`{"a":1e400}`, `{"a":1.5e2147483648}`, `{"a":1e99999999999}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"x\u12g4"}`, "{\"a\":\"b\x01\"}", `{"a":"\ud800"}`,
	`{"a":"\ud800\u0041"}`, `{"a":"\u0000"}`,
	`{"a":-0}`, `{"a":1e-400}`, `{"a":{}}x`, `{"method":1,"params":[],"id":1}`,
	`{"method":"echo","params":[],"id":1}trailing `,
}

// TestOvsdbParseErrorsDifferential sends each bad stream to Debian's
// ovsdb-server and govs' and requires the same warning, word for word and
// at the same line, column and byte, from a connection of the same name:
// OVS's parser reports a number or
// keyword at the byte after it, a string at its closing quote, and names
// what it expected there.
func TestOvsdbParseErrorsDifferential(t *testing.T) {
	logs := map[string][]string{}
	for _, kind := range []string{"debian", "govs"} {
		// A fresh server every four streams: OVS rate-limits these
		// warnings (five at once).
		var p *ovsdbProc
		for i, in := range ovsdbBadStreams {
			if i%4 == 0 {
				if p != nil {
					keepsServing(t, p)
					p.stop()
				}
				p = ovsdbStart(t, ovsdbOpts{kind: kind})
			}
			c, err := net.Dial("unix", p.sock)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte(in))
			// The server drops the connection: read until it does.
			c.SetReadDeadline(time.Now().Add(vswTimeout))
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatalf("%s kept the connection after %q", kind, in)
					}
					break
				}
			}
			c.Close()
			want := i%4 + 1
			var got []string
			deadline := time.Now().Add(vswTimeout)
			for {
				got = nil
				for _, m := range ovsdbStreamErrRe.FindAllStringSubmatch(p.readLog(), -1) {
					got = append(got, m[1])
				}
				if len(got) >= want || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(got) != want {
				t.Fatalf("%s: %d warnings after %q, want %d:\n%s", kind, len(got), in, want, p.readLog())
			}
			logs[kind] = append(logs[kind], got[want-1])
		}
		keepsServing(t, p)
		p.stop()
	}
	for i, in := range ovsdbBadStreams {
		if d, g := logs["debian"][i], logs["govs"][i]; d != g {
			t.Errorf("%q:\ndebian: %s\ngovs:   %s", in, d, g)
		}
	}
	if !strings.Contains(strings.Join(logs["govs"], "\n"), "line 2, column 8, byte 10") {
		t.Errorf("no position counted the whitespace before a message: %v", logs["govs"])
	}
}

// keepsServing fails t unless p, after the bad streams, still answers a
// new client.
func keepsServing(t *testing.T, p *ovsdbProc) {
	t.Helper()
	out := ovsdbExchange(t, p.sock, `{"method":"list_dbs","params":[],"id":1}`)
	if len(out) != 1 || !strings.Contains(out[0], `"Open_vSwitch"`) {
		t.Fatalf("%s after the bad streams: %v", p.kind, out)
	}
}
