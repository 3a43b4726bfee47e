package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var ovsdbLogStampRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT[0-9:.]+Z\|\d+\|`)

// ovsdbStartOnce runs a server with args in a fresh directory holding
// conf.db (made from schema by ovsdb-tool), listening on DIR/db.sock, and
// returns it with what the start printed (stamps and the directory
// normalised) and its exit code. A server that started is stopped by its
// pidfile when the test ends.
func ovsdbStartOnce(t *testing.T, kind, schema string, args ...string) (*ovsdbProc, string, int) {
	t.Helper()
	return ovsdbStartFirst(t, kind, schema, nil, args...)
}

// ovsdbStartFirst is ovsdbStartOnce with options first that come before
// --log-file on the command line (OVS fixes its syslog method at the first
// message logged, which --log-file's "opened log file" is).
func ovsdbStartFirst(t *testing.T, kind, schema string, first []string, args ...string) (*ovsdbProc, string, int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ovsdbt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if r := ovsdbRun(ovsdbTool, "create", filepath.Join(dir, "conf.db"), schema); r.code != 0 {
		t.Fatalf("ovsdb-tool create: %s", r.stderr)
	}
	bin := ovsdbDebianServer
	if kind == "govs" {
		bin = ovsdbGovsServer(t)
	}
	p := &ovsdbProc{t: t, kind: kind, dir: dir, pidf: filepath.Join(dir, "pid"), sock: filepath.Join(dir, "db.sock"),
		ctl: filepath.Join(dir, "ctl"), log: filepath.Join(dir, "log")}
	t.Cleanup(p.stop)
	argv := append([]string{filepath.Join(dir, "conf.db")}, first...)
	argv = append(argv, "--pidfile="+p.pidf, "--remote=punix:"+p.sock,
		"--unixctl="+p.ctl, "--log-file="+p.log, "--detach", "--no-chdir")
	cmd := exec.Command(bin, append(argv, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	s := ovsdbLogStampRe.ReplaceAllString(string(out), "")
	return p, strings.ReplaceAll(s, dir, "DIR"), code
}

// TestOvsdbControlDifferential compares start-up and ovs-appctl answers
// of Debian's ovsdb-server and govs': nothing but "opened log file" on a
// detaching server's stderr, the vlog modules OVS knows, refused compaction
// of _Server, and db: remotes checked against the databases.
func TestOvsdbControlDifferential(t *testing.T) {
	type res struct {
		out  string
		code int
	}
	starts := []struct {
		name string
		args []string
	}{
		{"plain", nil},
		{"vlog modules", []string{"-vraft:file:dbg", "-vrelay:dbg", "-vreplication:off", "-vovsdb_idl:console:emer"}},
		{"db remote no database", []string{"--remote=db:x,y,z"}},
		{"db remote no table", []string{"--remote=db:Open_vSwitch,Nope,x"}},
		{"db remote no column", []string{"--remote=db:Open_vSwitch,Bridge,nope"}},
		{"syslog method after log file", []string{"--syslog-method=tcp:127.0.0.1:9"}},
		{"syslog methods", []string{"--syslog-method=null", "--syslog-method=bogus"}},
	}
	for _, st := range starts {
		var got [2]res
		for i, kind := range []string{"debian", "govs"} {
			_, out, code := ovsdbStartOnce(t, kind, ovsdbVSwitchSch, st.args...)
			got[i] = res{out, code}
		}
		if got[0] != got[1] {
			t.Errorf("start %s:\ndebian: exit %d %q\ngovs:   exit %d %q", st.name, got[0].code, got[0].out, got[1].code, got[1].out)
		}
	}

	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	cmds := [][]string{
		{"ovsdb-server/compact", "_Server"},
		{"ovsdb-server/compact", "nope"},
		{"ovsdb-server/compact", "Open_vSwitch"},
		{"ovsdb-server/add-remote", "db:x,y,z"},
		{"ovsdb-server/add-remote", "db:Open_vSwitch,Nope,x"},
		{"ovsdb-server/add-remote", "db:Open_vSwitch,Bridge,nope"},
		{"ovsdb-server/add-remote", "db:Open_vSwitch,Bridge"},
		{"ovsdb-server/add-remote", "db:Open_vSwitch,Open_vSwitch,manager_options"},
		{"vlog/set", "raft:file:dbg"},
		{"vlog/set", "ovsdb_cs:off"},
		{"vlog/set", "PATTERN"},
		{"vlog/set", "PATTERN:bogus:%m"},
		{"vlog/set", "FACILITY:bogus"},
		{"vlog/set", "FACILITY:local3"},
		{"vlog/set", "PATTERN:console:%p %m"},
		{"vlog/set", "pattern:FILE"},
		{"vlog/list-pattern"},
		{"vlog/disable-rate-limit"},
		{"vlog/disable-rate-limit", "jsonrpc", "ANY"},
		{"vlog/enable-rate-limit", "raft", "nosuch"},
		{"vlog/enable-rate-limit"},
	}
	for _, c := range cmds {
		var got [2]res
		for i, p := range servers {
			r := p.appctl(c...)
			got[i] = res{strings.ReplaceAll(r.stdout+r.stderr, p.ctl, "CTL"), r.code}
		}
		if got[0] != got[1] {
			t.Errorf("ovs-appctl %s:\ndebian: exit %d %q\ngovs:   exit %d %q", strings.Join(c, " "), got[0].code, got[0].out, got[1].code, got[1].out)
		}
	}
	modules := func(p *ovsdbProc) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(p.appctl("vlog/list").stdout, "\n")[2:] {
			if f := strings.Fields(l); len(f) > 0 {
				m[f[0]] = true
			}
		}
		return m
	}
	deb, gov := modules(servers[0]), modules(servers[1])
	if len(deb) < 100 {
		t.Fatalf("Debian's vlog/list has %d modules", len(deb))
	}
	for m := range deb {
		if !gov[m] {
			t.Errorf("vlog module %s: Debian's ovsdb-server has it, govs' does not", m)
		}
	}
}

// ovsdbROSchema has a Connection table as OVN's databases do: remotes from
// db:RO,Root,connections, each with a read_only column.
const ovsdbROSchema = `{"name":"RO","version":"1.0.0","tables":{
 "Root":{"isRoot":true,"maxRows":1,"columns":{"connections":{"type":{"key":{"type":"uuid","refTable":"Connection"},"min":0,"max":"unlimited"}}}},
 "Connection":{"columns":{"target":{"type":"string"},"read_only":{"type":"boolean"},"inactivity_probe":{"type":{"key":"integer","min":0,"max":1}}},"indexes":[["target"]]},
 "Item":{"isRoot":true,"columns":{"name":{"type":"string"}}}}}`

// TestOvsdbReadOnlyRemote checks that a remote configured by a row with
// read_only=true refuses writes with Debian's errors, on both servers.
func TestOvsdbReadOnlyRemote(t *testing.T) {
	txns := []string{
		`["RO",{"op":"insert","table":"Item","row":{"name":"x"}}]`,
		`["RO",{"op":"select","table":"Item","where":[],"columns":["name"]},{"op":"update","table":"Item","where":[],"row":{"name":"y"}}]`,
		`["RO",{"op":"mutate","table":"Item","where":[],"mutations":[]}]`,
		`["RO",{"op":"delete","table":"Item","where":[]}]`,
		`["RO",{"op":"comment","comment":"x"},{"op":"wait","table":"Item","where":[],"until":"!=","rows":[],"timeout":0},{"op":"commit","durable":false}]`,
		`["RO",{"op":"insert","table":"Nope","row":{}}]`,
		`["RO",{"op":"select","table":"Item","where":[],"columns":["name"]}]`,
	}
	sch := filepath.Join(t.TempDir(), "ro.ovsschema")
	if err := os.WriteFile(sch, []byte(ovsdbROSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	var outs [2][]string
	for i, kind := range []string{"debian", "govs"} {
		p, out, code := ovsdbStartOnce(t, kind, sch, "--remote=db:RO,Root,connections")
		if code != 0 {
			t.Fatalf("%s ovsdb-server: exit %d: %s", kind, code, out)
		}
		ovsdbWait(t, 10*time.Second, kind+" socket", func() bool {
			c, err := net.Dial("unix", p.sock)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		ro := filepath.Join(p.dir, "ro.sock")
		r := p.client("transact", "unix:"+p.sock, `["RO",{"op":"insert","table":"Root","row":{"connections":["named-uuid","c"]}},`+
			`{"op":"insert","table":"Connection","uuid-name":"c","row":{"target":"punix:`+ro+`","read_only":true}},{"op":"insert","table":"Item","row":{"name":"i0"}}]`)
		if r.code != 0 {
			t.Fatalf("%s: %s", kind, r.stderr)
		}
		ovsdbWait(t, 10*time.Second, kind+" read-only socket", func() bool {
			c, err := net.Dial("unix", ro)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		for _, q := range txns {
			r := p.client("transact", "unix:"+ro, q)
			outs[i] = append(outs[i], r.stdout+r.stderr)
		}
	}
	for i, q := range txns {
		if outs[0][i] != outs[1][i] {
			t.Errorf("read-only transact %s\ndebian: %s\ngovs:   %s", q, outs[0][i], outs[1][i])
		}
	}
}

// TestOvsdbRefusesRelayAndCluster checks that govs refuses, by name, the
// database kinds it does not serve (clustered) and malformed relay
// arguments rather than taking them for file names.
func TestOvsdbRefusesRelayAndCluster(t *testing.T) {
	dir, err := os.MkdirTemp("", "ovsdbt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cl := filepath.Join(dir, "cl.db")
	if r := ovsdbRun(ovsdbTool, "create-cluster", cl, ovsdbVSwitchSch, "unix:"+filepath.Join(dir, "raft.sock")); r.code != 0 {
		t.Fatalf("ovsdb-tool create-cluster: %s", r.stderr)
	}
	for _, tc := range []struct{ db, want string }{
		{"relay:OVN_Southbound:ptcp:x", "relay:OVN_Southbound:ptcp:x: x: bad port number"},
		{cl, "clustered databases are not supported"},
	} {
		pidf := filepath.Join(dir, "pid")
		cmd := exec.Command(ovsdbGovsServer(t), tc.db, "--pidfile="+pidf, "--unixctl="+filepath.Join(dir, "ctl"), "--detach", "--no-chdir")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil {
			b, _ := os.ReadFile(pidf)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				syscall.Kill(pid, syscall.SIGTERM)
			}
			t.Fatalf("%s: server started", tc.db)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %q, want %q", tc.db, out, tc.want)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "relay") {
			t.Errorf("a relay: argument made a file %s", e.Name())
		}
	}
}

// TestOvsdbSyslogAsDebian starts Debian's ovsdb-server and govs' with
// --syslog-method=unix:SOCKET and compares the datagrams each sends up to
// its version line: priorities, patterns and numbering.
func TestOvsdbSyslogAsDebian(t *testing.T) {
	var got [2][]string
	for i, kind := range []string{"debian", "govs"} {
		dir := t.TempDir()
		sock := filepath.Join(dir, "sl")
		ux, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer ux.Close()
		p, out, code := ovsdbStartFirst(t, kind, ovsdbVSwitchSch, []string{"--syslog-method=unix:" + sock, "-vsyslog:info"})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", kind, code, out)
		}
		buf := make([]byte, 4096)
		for {
			ux.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _, err := ux.ReadFrom(buf)
			if err != nil {
				t.Fatalf("%s: no version line among %q: %v", kind, got[i], err)
			}
			got[i] = append(got[i], strings.ReplaceAll(string(buf[:n]), p.dir, "DIR"))
			if strings.Contains(string(buf[:n]), "(Open vSwitch)") {
				break
			}
		}
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Errorf("syslog datagrams:\ndebian: %q\ngovs:   %q", got[0], got[1])
	}
}
