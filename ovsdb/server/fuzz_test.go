package server

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/govs/govs/ovsdb/jsonrpc"
)

// FuzzServerRequests sends arbitrary params to the methods that parse them
// (transact, monitor*, lock) and checks that the server answers and keeps
// serving: no panic, no hang, the connection stays usable for well-formed
// requests.
func FuzzServerRequests(f *testing.F) {
	f.Add("transact", `["Open_vSwitch",{"op":"insert","table":"Bridge","row":{"name":"br0"},"uuid-name":"b"},{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["set",[["named-uuid","b"]]]]]}]`)
	f.Add("transact", `["Open_vSwitch",{"op":"wait","timeout":0,"table":"Bridge","where":[],"columns":["name"],"until":"==","rows":[]}]`)
	f.Add("monitor_cond", `["Open_vSwitch",["m"],{"Bridge":[{"columns":["name"],"where":[["name","!=","x"],true]}]}]`)
	f.Add("monitor_cond_since", `["Open_vSwitch",["m"],{"Interface":[{"select":{"initial":false}}]},"00000000-0000-0000-0000-000000000000"]`)
	f.Add("monitor_cond_change", `[["m"],["m"],{"Bridge":[{"where":[false]}]}]`)
	f.Add("monitor", `["_Server",null,{"Database":{}}]`)
	f.Add("lock", `["x"]`)
	_, sock := testServer(f, Options{})
	// GOVS_FUZZ_STRICT=1 also fails on requests that panicked (and were
	// answered with "internal error"), to find bugs rather than only
	// checking that the server survives them.
	strict := os.Getenv("GOVS_FUZZ_STRICT") != ""
	f.Fuzz(func(t *testing.T, method, params string) {
		// Invalid UTF-8 closes the connection, as in OVS.
		if !json.Valid([]byte(params)) || !utf8.ValidString(params) || len(params) == 0 || params[0] != '[' {
			return
		}
		switch method {
		case "transact", "monitor", "monitor_cond", "monitor_cond_since", "monitor_cond_change", "monitor_cancel", "lock", "steal", "unlock", "get_schema":
		default:
			return
		}
		c := dialTest(t, sock)
		req := &jsonrpc.Message{Method: method, Params: json.RawMessage(params), ID: json.RawMessage(`"fuzz"`)}
		c.c.Write(req.Append(nil))
		c.c.Write([]byte(`{"method":"echo","params":["alive"],"id":"ping"}`))
		deadline := time.Now().Add(10 * time.Second)
		for {
			c.c.SetReadDeadline(deadline)
			m, err := c.dec.Decode()
			if err != nil {
				// A transaction with an unsatisfied wait may still be
				// pending, but the echo must have come back.
				t.Fatalf("%s %s: no answer to echo: %v", method, params, err)
			}
			if string(m.ID) == `"fuzz"` && strict && strings.Contains(string(m.Error), "internal error") {
				t.Fatalf("%s %s: %s", method, params, m.Error)
			}
			if string(m.ID) == `"ping"` {
				return
			}
		}
	})
}
