package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ovsdbStartRelay starts an ovsdb-server (govs' or Debian's) relaying
// Open_vSwitch from source, serving it on a unix socket.
func ovsdbStartRelay(t *testing.T, kind, source string, extra ...string) *ovsdbProc {
	t.Helper()
	dir, err := os.MkdirTemp("", "ovsdbr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	p := &ovsdbProc{t: t, kind: kind, dir: dir, sock: filepath.Join(dir, "db.sock"), ctl: filepath.Join(dir, "ovsdb-server.ctl"),
		pidf: filepath.Join(dir, "ovsdb-server.pid"), log: filepath.Join(dir, "ovsdb-server.log"), binary: ovsdbDebianServer}
	if kind == "govs" {
		p.binary = ovsdbGovsServer(t)
	}
	p.args = append([]string{"relay:Open_vSwitch:" + source, "--remote=punix:" + p.sock, "--pidfile=" + p.pidf,
		"--unixctl=" + p.ctl, "--log-file=" + p.log, "--detach", "--no-chdir"}, extra...)
	p.start()
	t.Cleanup(p.stop)
	return p
}

// relayMonitor is ovsdb-client monitoring Bridge names through a relay.
type relayMonitor struct {
	t     *testing.T
	rel   *ovsdbProc
	lines <-chan string
	got   []string
}

// take appends the monitor's next n lines to got.
func (m *relayMonitor) take(n int) {
	m.t.Helper()
	for i := 0; i < n; i++ {
		select {
		case l := <-m.lines:
			m.got = append(m.got, l)
		case <-time.After(vswTimeout):
			m.t.Fatalf("timed out waiting for the monitor through the relay; got %q\nrelay log:\n%s", m.got, m.rel.readLog())
		}
	}
}

// ovsdbRelaySteps starts a monitor through relay rel of src, which has br0,
// adds br1 at the source and a bridge through the relay (ovsdb-client
// forwards it, the source commits it, the relay's monitor shows it), and
// returns the monitor with what it showed.
func ovsdbRelaySteps(t *testing.T, src, rel *ovsdbProc) *relayMonitor {
	t.Helper()
	relay := "unix:" + rel.sock
	m := &relayMonitor{t: t, rel: rel, lines: ovsdbMonitor(t, "monitor", relay, "Open_vSwitch", "Bridge", "name")}
	m.take(2) // header, br0
	src.mustVsctl("add-br", "br1")
	m.take(2)
	r := ovsdbRun(ovsdbClient, "--timeout=30", "transact", relay, `["Open_vSwitch",
		{"op":"insert","table":"Bridge","row":{"name":"viarelay"},"uuid-name":"b"},
		{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["set",[["named-uuid","b"]]]]]}]`)
	if r.code != 0 || !strings.Contains(r.stdout, `"uuid"`) {
		t.Fatalf("transact through the relay: exit %d: %s%s\nrelay log:\n%s", r.code, r.stdout, r.stderr, rel.readLog())
	}
	m.take(2)
	return m
}

// TestOVSDBRelay: Debian's ovsdb-client monitors through a relay (govs'
// or, for comparison, Debian's) in front of govs' or Debian's server, and
// sees changes made at the source; a transaction sent to the relay lands
// at the source; _Server shows the relay as OVS does. One variant reaches
// the source over ssl:.
func TestOVSDBRelay(t *testing.T) {
	type variant struct{ src, relay string }
	variants := []variant{{"govs", "govs"}, {"debian", "govs"}, {"debian", "debian"}, {"govs-ssl", "govs"}}
	outputs := map[variant][]string{}
	for _, v := range variants {
		t.Run(v.src+"-to-"+v.relay, func(t *testing.T) {
			var src *ovsdbProc
			source := ""
			var extra []string
			if v.src == "govs-ssl" {
				k := sslCerts(t)
				port := ovsdbFreePort(t)
				src = ovsdbStart(t, ovsdbOpts{remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
					extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=" + k.ca}})
				ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
				source = fmt.Sprintf("ssl:127.0.0.1:%d", port)
				extra = []string{"--private-key=" + k.cliKey, "--certificate=" + k.cliCert, "--ca-cert=" + k.ca}
			} else {
				src = ovsdbStart(t, ovsdbOpts{kind: v.src})
				source = "unix:" + src.sock
			}
			src.mustVsctl("init")
			src.mustVsctl("add-br", "br0")
			rel := ovsdbStartRelay(t, v.relay, source, extra...)
			relay := "unix:" + rel.sock

			// The relay serves once it has its copy.
			ovsdbWait(t, vswTimeout, "the relay's copy", func() bool {
				r := ovsdbRun(ovsdbClient, "--timeout=10", "dump", relay, "_Server", "Database", "name", "model", "connected", "leader")
				return strings.Contains(r.stdout, "true      false  relay      Open_vSwitch")
			})
			m := ovsdbRelaySteps(t, src, rel)
			if br := src.mustVsctl("list-br"); br != "br0\nbr1\nviarelay\n" {
				t.Errorf("source's bridges after the relayed transaction: %q", br)
			}
			// Errors come back from the source as they are.
			r := ovsdbRun(ovsdbClient, "--timeout=30", "transact", relay, `["Open_vSwitch",{"op":"insert","table":"Bridge","row":{"name":5}}]`)
			m.got = append(m.got, r.stdout)
			outputs[v] = m.got
		})
	}
	want := outputs[variant{"debian", "debian"}]
	for _, v := range variants {
		if fmt.Sprint(outputs[v]) != fmt.Sprint(want) {
			t.Errorf("%s source, %s relay:\n%q\nDebian's relay of Debian's server:\n%q", v.src, v.relay, outputs[v], want)
		}
	}
}

// TestOVSDBRelayReconnect: the relay survives its source's restart: it
// reports connected false meanwhile, serves reads from its copy and
// refuses changes with an error, and serves the source's changes again
// once back; its monitors see only what changed meanwhile.
func TestOVSDBRelayReconnect(t *testing.T) {
	src := ovsdbStart(t, ovsdbOpts{kind: "govs"})
	src.mustVsctl("init")
	src.mustVsctl("add-br", "br0")
	rel := ovsdbStartRelay(t, "govs", "unix:"+src.sock)
	relay := "unix:" + rel.sock
	status := func() string {
		return ovsdbRun(ovsdbClient, "--timeout=10", "dump", relay, "_Server", "Database", "name", "model", "connected", "leader").stdout
	}
	bridges := func() string {
		r := ovsdbRun(ovsdbClient, "--timeout=10", "dump", relay, "Open_vSwitch", "Bridge", "name")
		return r.stdout + r.stderr
	}
	ovsdbWait(t, vswTimeout, "the relay's copy", func() bool { return strings.Contains(bridges(), "br0") })
	lines := ovsdbMonitor(t, "monitor", relay, "Open_vSwitch", "Bridge", "name")
	ovsdbExpectLines(t, "relay monitor", lines, "row,action,name", "<uuid>,initial,br0")
	src.stop()
	ovsdbWait(t, vswTimeout, "connected false", func() bool {
		return strings.Contains(status(), "false     false  relay      Open_vSwitch")
	})
	r := ovsdbRun(ovsdbClient, "--timeout=10", "transact", relay,
		`["Open_vSwitch",{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["a","b"]]]]]}]`)
	if r.code == 0 || !strings.Contains(r.stderr, "not connected") {
		t.Errorf("transaction without a source: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(bridges(), "br0") {
		t.Errorf("the copy is not served while the source is down:\n%s", bridges())
	}
	src.start()
	src.mustVsctl("add-br", "br1")
	ovsdbWait(t, vswTimeout, "br1 through the relay after the restart", func() bool {
		b := bridges()
		return strings.Contains(b, "br0") && strings.Contains(b, "br1")
	})
	// Reloading the copy showed the monitor only what changed.
	ovsdbExpectLines(t, "relay monitor", lines, "row,action,name", "<uuid>,insert,br1")
	if !strings.Contains(status(), "true      false  relay      Open_vSwitch") {
		t.Errorf("_Server after the reconnect:\n%s", status())
	}
}

// TestOVSDBRelayPassive: a relay whose source is passive (punix:, ptcp:)
// listens, and the source, an ovsdb-server with an active --remote,
// connects to it, as OVS's relay does with a passive name (the relay
// still asks for the schema and monitors). Monitors through the relay,
// a transaction through it and the source's restart give the same output
// with govs' relay as with Debian's.
func TestOVSDBRelayPassive(t *testing.T) {
	type variant struct{ src, relay, via string }
	variants := []variant{{"debian", "debian", "punix"}, {"debian", "govs", "punix"}, {"govs", "govs", "ptcp"}}
	outputs := map[variant][]string{}
	for _, v := range variants {
		t.Run(v.src+"-to-"+v.relay+"-"+v.via, func(t *testing.T) {
			lsock, err := os.MkdirTemp("", "ovsdbp-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(lsock) })
			passive, active := "punix:"+filepath.Join(lsock, "src.sock"), "unix:"+filepath.Join(lsock, "src.sock")
			if v.via == "ptcp" {
				port := ovsdbFreePort(t)
				passive, active = fmt.Sprintf("ptcp:%d:127.0.0.1", port), fmt.Sprintf("tcp:127.0.0.1:%d", port)
			}
			rel := ovsdbStartRelay(t, v.relay, passive)
			relay := "unix:" + rel.sock
			src := ovsdbStart(t, ovsdbOpts{kind: v.src, remotes: []string{active}})
			src.mustVsctl("init")
			src.mustVsctl("add-br", "br0")
			bridges := func() string {
				r := ovsdbRun(ovsdbClient, "--timeout=10", "dump", relay, "Open_vSwitch", "Bridge", "name")
				return r.stdout + r.stderr
			}
			ovsdbWait(t, vswTimeout, "the relay's copy from the connecting source", func() bool {
				r := ovsdbRun(ovsdbClient, "--timeout=10", "dump", relay, "_Server", "Database", "name", "model", "connected", "leader")
				return strings.Contains(r.stdout, "true      false  relay      Open_vSwitch") && strings.Contains(bridges(), "br0")
			})
			m := ovsdbRelaySteps(t, src, rel)
			// The source goes away and comes back: the relay takes its new
			// connection and its monitors see only what changed meanwhile.
			src.stop()
			src.start()
			src.mustVsctl("add-br", "br2")
			ovsdbWait(t, vswTimeout, "br2 through the relay after the source's restart", func() bool {
				return strings.Contains(bridges(), "br2")
			})
			m.take(2)
			if br := src.mustVsctl("list-br"); br != "br0\nbr1\nbr2\nviarelay\n" {
				t.Errorf("source's bridges: %q", br)
			}
			outputs[v] = m.got
		})
	}
	want := outputs[variants[0]]
	for _, v := range variants[1:] {
		if fmt.Sprint(outputs[v]) != fmt.Sprint(want) {
			t.Errorf("%s source, %s relay over %s:\n%q\nDebian's relay of Debian's server:\n%q", v.src, v.relay, v.via, outputs[v], want)
		}
	}
}
