package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// chaosInsertBridge is one transaction adding bridge name to the root row.
func chaosInsertBridge(name string, id int) []byte {
	b, _ := json.Marshal(map[string]any{"method": "transact", "id": id, "params": []any{"Open_vSwitch",
		map[string]any{"op": "insert", "table": "Bridge", "row": map[string]any{"name": name}, "uuid-name": "b"},
		map[string]any{"op": "mutate", "table": "Open_vSwitch", "where": []any{},
			"mutations": []any{[]any{"bridges", "insert", []any{"named-uuid", "b"}}}},
	}})
	return b
}

// chaosListBr returns the bridges Debian's ovs-vsctl sees.
func chaosListBr(t testing.TB, sock string) map[string]bool {
	t.Helper()
	r := ovsdbRun(ovsdbVsctl, "--db=unix:"+sock, "--timeout=20", "--no-wait", "list-br")
	if r.code != 0 {
		t.Fatalf("ovs-vsctl list-br: exit %d: %s", r.code, r.stderr)
	}
	m := map[string]bool{}
	for _, l := range strings.Fields(r.stdout) {
		m[l] = true
	}
	return m
}

// TestChaosOvsdbKill9Writers: ten clients commit as fast as the server
// answers; the server is killed with SIGKILL mid-stream and restarted.
// Every commit it acknowledged must be there afterwards.
func TestChaosOvsdbKill9Writers(t *testing.T) {
	const writers = 10
	rounds, perRound := chaosN(1, 3), chaosN(200, 1000)
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	acked := map[string]bool{}
	total, lost, inflight := 0, 0, 0
	for round := 0; round < rounds; round++ {
		var (
			mu    sync.Mutex // guards got, fails
			got   []string
			fails []string
			n     atomic.Int64
			wg    sync.WaitGroup
		)
		for w := 0; w < writers; w++ {
			c, err := net.Dial("unix", p.sock)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				dec := json.NewDecoder(c)
				for i := 0; ; i++ {
					name := fmt.Sprintf("gvchw%d-%d-%d", round, w, i)
					c.SetDeadline(time.Now().Add(20 * time.Second))
					if _, err := c.Write(chaosInsertBridge(name, i)); err != nil {
						return
					}
					var reply struct {
						Result []map[string]any
						Error  any
					}
					if err := dec.Decode(&reply); err != nil {
						return // the server died: this commit was not acknowledged
					}
					mu.Lock()
					if reply.Error != nil || len(reply.Result) != 2 || reply.Result[0]["error"] != nil || reply.Result[1]["count"] != 1.0 {
						fails = append(fails, fmt.Sprintf("%s: %v %v", name, reply.Result, reply.Error))
					} else {
						got = append(got, name)
					}
					mu.Unlock()
					n.Add(1)
				}
			}()
		}
		ovsdbWait(t, 120*time.Second, fmt.Sprintf("%d acknowledged commits", perRound), func() bool { return n.Load() >= int64(perRound) })
		chaosSignal(p, syscall.SIGKILL)
		wg.Wait()
		p.start()
		if len(fails) > 0 {
			t.Fatalf("round %d: commits refused: %v", round, fails[:min(len(fails), 5)])
		}
		present := chaosListBr(t, p.sock)
		for _, name := range got {
			acked[name] = true
		}
		for name := range acked {
			if !present[name] {
				lost++
				t.Errorf("round %d: acknowledged bridge %s is missing after kill -9", round, name)
			}
		}
		for name := range present {
			if !acked[name] {
				inflight++ // written, its reply not read before the kill
				acked[name] = true
			}
		}
		total += len(got)
	}
	if log := p.readLog(); regexp.MustCompile(`panic:|\|EMER\|`).MatchString(log) {
		t.Errorf("ovsdb-server log:\n%s", vswTail(log, 40))
	}
	chaosFigures(t, "%d kill -9 under %d writers, %d acknowledged commits, %d lost, %d unacknowledged kept",
		rounds, writers, total, lost, inflight)
}

// chaosSignal sends sig to the server and waits for it to end. Unlike
// ovsdbProc.stop it counts an unreaped zombie as gone: a --detach daemon's
// parent here may never reap it.
func chaosSignal(p *ovsdbProc, sig syscall.Signal) {
	p.t.Helper()
	pid := p.pid()
	if pid <= 0 || syscall.Kill(pid, sig) != nil {
		return
	}
	vswWaitGone(p.t, pid)
}

// chaosDBOutcome is what a server makes of a database file: whether it
// started, the bridges it serves, and after one more commit and a
// restart, the bridges again.
type chaosDBOutcome struct {
	started bool
	before  string
	after   string
	log     string
}

// chaosOpenDB starts the kind of server on a copy of db in a fresh
// directory and reports what it serves.
func chaosOpenDB(t *testing.T, kind string, db []byte) chaosDBOutcome {
	t.Helper()
	dir, err := os.MkdirTemp("", "gvch-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "conf.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &ovsdbProc{t: t, kind: kind, dir: dir, db: filepath.Join(dir, "conf.db"),
		sock: filepath.Join(dir, "db.sock"), ctl: filepath.Join(dir, "ovsdb-server.ctl"),
		pidf: filepath.Join(dir, "ovsdb-server.pid"), log: filepath.Join(dir, "ovsdb-server.log"),
		binary: ovsdbDebianServer}
	if kind == "govs" {
		p.binary = ovsdbGovsServer(t)
	}
	p.args = []string{p.db, "--remote=punix:" + p.sock, "--pidfile=" + p.pidf, "--unixctl=" + p.ctl,
		"--log-file=" + p.log, "--detach", "--no-chdir"}
	var o chaosDBOutcome
	list := func() string {
		r := ovsdbRun(ovsdbVsctl, "--db=unix:"+p.sock, "--timeout=20", "--no-wait", "list-br")
		return fmt.Sprintf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command(p.binary, p.args...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "OVS_DBDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		o.log = fmt.Sprintf("%v: %s%s", err, out, p.readLog())
		return o
	}
	defer chaosSignal(p, syscall.SIGTERM)
	o.started = true
	ovsdbWait(t, 10*time.Second, "socket "+p.sock, func() bool { _, err := os.Stat(p.sock); return err == nil })
	o.before = list()
	if r := p.vsctl("--no-wait", "add-br", "gvchafter"); r.code != 0 {
		o.after = fmt.Sprintf("add-br: exit %d: %s", r.code, r.stderr)
		return o
	}
	chaosSignal(p, syscall.SIGTERM)
	p.start()
	o.after = list()
	o.log = p.readLog()
	return o
}

// TestChaosOvsdbDamagedFiles opens torn, corrupted and foreign database
// files with govs' ovsdb-server and with Debian's, and requires the same
// outcome: both start or both refuse, serving the same rows, and a commit
// made after opening survives a restart.
func TestChaosOvsdbDamagedFiles(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	for i := 0; i < 6; i++ {
		p.mustVsctl("add-br", fmt.Sprintf("gvchf%d", i))
	}
	chaosSignal(p, syscall.SIGTERM)
	good, err := os.ReadFile(p.db)
	if err != nil {
		t.Fatal(err)
	}
	// Offsets of each record's "OVSDB JSON" header.
	var recs []int
	for off := 0; ; {
		i := bytes.Index(good[off:], []byte("OVSDB JSON "))
		if i < 0 {
			break
		}
		recs = append(recs, off+i)
		off += i + 1
	}
	if len(recs) < 7 {
		t.Fatalf("%d records in the database, want at least 7", len(recs))
	}
	last, mid := recs[len(recs)-1], recs[len(recs)/2]
	midBody := mid + bytes.IndexByte(good[mid:], '\n') + 1
	flip := func(b []byte, at int) []byte {
		c := bytes.Clone(b)
		c[at] ^= 0x20
		return c
	}
	// longer makes the record at off claim 50 bytes more than it has.
	longer := func(b []byte, off int) []byte {
		eol := off + bytes.IndexByte(b[off:], '\n')
		var n int
		var hash string
		if _, err := fmt.Sscanf(string(b[off:eol]), "OVSDB JSON %d %s", &n, &hash); err != nil {
			t.Fatalf("record header %q: %v", b[off:eol], err)
		}
		c := append(bytes.Clone(b[:off]), fmt.Sprintf("OVSDB JSON %d %s", n+50, hash)...)
		return append(c, b[eol:]...)
	}
	rnd := rand.New(rand.NewSource(10))
	garbage := make([]byte, 4096)
	rnd.Read(garbage)
	cases := []struct {
		name string
		db   []byte
	}{
		{"torn in the last header", good[:last+7]},
		{"torn in the last record", good[:len(good)-9]},
		{"torn after the last header", good[:last+bytes.IndexByte(good[last:], '\n')+1]},
		{"garbage after the last record", append(bytes.Clone(good), garbage[:300]...)},
		{"a flipped byte in a middle record", flip(good, midBody+5)},
		{"a flipped byte in a middle header", flip(good, mid+12)},
		{"the last record's length too long", longer(good, last)},
		{"random bytes", garbage},
		{"an empty file", nil},
		{"the schema only", good[:recs[1]]},
	}
	differ := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deb, gov := chaosOpenDB(t, "debian", tc.db), chaosOpenDB(t, "govs", tc.db)
			if deb.started != gov.started || deb.before != gov.before || deb.after != gov.after {
				differ++
				t.Errorf("debian: started %v\n  before: %s\n  after: %s\ngovs: started %v\n  before: %s\n  after: %s\ngovs log:\n%s",
					deb.started, deb.before, deb.after, gov.started, gov.before, gov.after, vswTail(gov.log, 10))
			}
			if gov.started && !strings.Contains(gov.after, "gvchafter") {
				t.Errorf("a commit after opening the damaged file was lost: %s", gov.after)
			}
			if regexp.MustCompile(`panic:|\|EMER\|`).MatchString(gov.log) {
				t.Errorf("govs log:\n%s", gov.log)
			}
		})
	}
	chaosFigures(t, "%d damaged database files opened, %d differ from Debian's ovsdb-server", len(cases), differ)
}

// chaosServerRSS waits until the server's RSS is within bound KB, and
// returns the RSS it saw last.
func chaosServerRSS(t *testing.T, p *ovsdbProc, boundKB int, what string) int {
	t.Helper()
	var st chaosProc
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if st, err = chaosStat(p.pid()); err != nil {
			t.Fatalf("ovsdb-server is gone %s: %v\n%s", what, err, vswTail(p.readLog(), 20))
		}
		if st.rssKB <= boundKB {
			return st.rssKB
		}
		if time.Now().After(deadline) {
			t.Errorf("ovsdb-server RSS %d MB %s, over the bound of %d MB", st.rssKB>>10, what, boundKB>>10)
			return st.rssKB
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// chaosServed checks that another client is answered while hostile ones
// are connected.
func chaosServed(t *testing.T, p *ovsdbProc, what string) {
	t.Helper()
	if r := p.vsctl("--no-wait", "list-br"); r.code != 0 {
		t.Fatalf("ovs-vsctl list-br %s: exit %d: %s", what, r.code, r.stderr)
	}
}

// TestChaosOvsdbHostileClients: clients that pipeline 64 KiB echo requests
// without reading, slowloris clients, a huge message and a string with a NUL
// byte. The server must keep serving others, keep its memory and
// descriptors bounded and give them back, and refuse the NUL string as
// Debian's ovsdb-server does, losing nothing.
func TestChaosOvsdbHostileClients(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init", "--", "add-br", "gvchkeep")
	base, err := chaosStat(p.pid())
	if err != nil {
		t.Fatal(err)
	}
	bound := chaosMemBound(base.rssKB, chaosSlackKB)
	var figs []string

	t.Run("echo pipeline", func(t *testing.T) {
		clients := chaosN(4, 16)
		payload := strings.Repeat("x", 64<<10)
		var sent atomic.Int64
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		var wg sync.WaitGroup
		for i := 0; i < clients; i++ {
			c, err := net.Dial("unix", p.sock)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Until the server stops reading (a write blocks for a
				// second) or 256 MiB are sent.
				for id := 0; sent.Load() < 256<<20; id++ {
					msg := fmt.Sprintf(`{"method":"echo","params":["%s"],"id":%d}`, payload, id)
					c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := c.Write([]byte(msg)); err != nil {
						return
					}
					sent.Add(int64(len(msg)))
				}
			}()
		}
		wg.Wait()
		st, _ := chaosStat(p.pid())
		chaosServed(t, p, "during the echo flood")
		if st.rssKB > bound {
			t.Errorf("ovsdb-server RSS %d MB with %d clients not reading, over the bound of %d MB", st.rssKB>>10, clients, bound>>10)
		}
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		after := chaosServerRSS(t, p, bound, "after the echo flood")
		figs = append(figs, fmt.Sprintf("echo flood %d clients %d MiB sent: RSS %d MB, %d MB after", clients, sent.Load()>>20, st.rssKB>>10, after>>10))
	})

	t.Run("slowloris", func(t *testing.T) {
		clients, dribbles := chaosN(100, 400), chaosN(3, 10)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; i < clients; i++ {
			c, err := net.Dial("unix", p.sock)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, c)
			c.Write([]byte(`{"method":"echo","params":["`))
		}
		for d := 0; d < dribbles; d++ {
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write([]byte("s"))
			}
			chaosServed(t, p, fmt.Sprintf("with %d slowloris clients", clients))
		}
		st, _ := chaosStat(p.pid())
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		var now chaosProc
		ovsdbWait(t, 20*time.Second, "the slowloris connections' descriptors to close", func() bool {
			now, _ = chaosStat(p.pid())
			return now.fds <= base.fds
		})
		figs = append(figs, fmt.Sprintf("slowloris %d clients: fds %d -> %d -> %d", clients, base.fds, st.fds, now.fds))
	})

	t.Run("huge message", func(t *testing.T) {
		size := chaosN(300<<20, 300<<20)
		c, err := net.Dial("unix", p.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		chunk := bytes.Repeat([]byte("h"), 1<<20)
		c.Write([]byte(`{"method":"echo","id":1,"params":["`))
		written, outcome := 0, "read whole"
		for written < size {
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			n, err := c.Write(chunk)
			written += n
			if err != nil {
				outcome = "closed at " + fmt.Sprint(written>>20) + " MiB"
				break
			}
		}
		c.Write([]byte(`"]}`))
		chaosServed(t, p, "after a huge message")
		c.Close()
		after := chaosServerRSS(t, p, bound, "after a huge message")
		figs = append(figs, fmt.Sprintf("huge message %d MiB (%s): RSS %d MB after", size>>20, outcome, after>>10))
	})

	t.Run("NUL string", func(t *testing.T) {
		deb := ovsdbStart(t, ovsdbOpts{kind: "debian"})
		deb.mustVsctl("init", "--", "add-br", "gvchkeep")
		inputs := []string{
			`{"method":"transact","params":["Open_vSwitch",{"op":"update","table":"Bridge","where":[["name","==","gvchkeep"]],"row":{"external_ids":["map",[["k","a\u0000b"]]]}}],"id":7}`,
			`{"method":"transact","params":["Open_vSwitch",{"op":"insert","table":"Bridge","row":{"name":"gvch\u0000nul"},"uuid-name":"b"},{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","b"]]]}],"id":8}`,
			`{"method":"echo","params":["\u0000"],"id":9}`,
			`{"method":"transact","params":["Open_vSwitch",{"op":"update","table":"Bridge","where":[["name","==","gvchkeep"]],"row":{"external_ids":["map",[["k","\ud800"]]]}}],"id":10}`,
		}
		same := 0
		for _, in := range inputs {
			want, got := ovsdbExchange(t, deb.sock, in), ovsdbExchange(t, p.sock, in)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("%s\ndebian: %s\ngovs:   %s", in, want, got)
			} else {
				same++
			}
		}
		figs = append(figs, fmt.Sprintf("%d of %d NUL/surrogate strings answered as by Debian", same, len(inputs)))
		// Debian's tools still read everything, and nothing is lost over a restart.
		if r := p.vsctl("--no-wait", "add-br", "gvchnul2"); r.code != 0 {
			t.Errorf("ovs-vsctl add-br after the NUL strings: exit %d: %s", r.code, r.stderr)
		}
		for _, args := range [][]string{{"--no-wait", "list", "bridge"}, {"--no-wait", "get", "bridge", "gvchkeep", "external_ids"}} {
			if r := p.vsctl(args...); r.code != 0 {
				t.Errorf("ovs-vsctl %s after the NUL strings: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if r := p.client("dump", "unix:"+p.sock); r.code != 0 {
			t.Errorf("ovsdb-client dump after the NUL strings: exit %d: %s", r.code, r.stderr)
		}
		chaosSignal(p, syscall.SIGTERM)
		if r := ovsdbRun(ovsdbTool, "show-log", p.db); r.code != 0 {
			t.Errorf("ovsdb-tool show-log after the NUL strings: exit %d: %s", r.code, r.stderr)
		}
		p.start()
		if br := chaosListBr(t, p.sock); !br["gvchkeep"] || !br["gvchnul2"] {
			t.Errorf("bridges after a restart: %v", br)
		}
	})
	if log := p.readLog(); regexp.MustCompile(`panic:|\|EMER\|`).MatchString(log) {
		t.Errorf("ovsdb-server log:\n%s", vswTail(log, 40))
	}
	sort.Strings(figs)
	chaosFigures(t, "RSS baseline %d MB, bound %d MB; %s", base.rssKB>>10, bound>>10, strings.Join(figs, "; "))
}
