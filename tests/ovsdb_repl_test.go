package tests

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ovsdbDumpLines is the server's Open_vSwitch database as ovsdb-client dump
// prints it, lines sorted: a backup has the active's rows, uuids included.
func ovsdbDumpLines(t *testing.T, p *ovsdbProc) string {
	t.Helper()
	r := p.client("dump", "unix:"+p.sock, "Open_vSwitch")
	if r.code != 0 {
		t.Fatalf("%s: ovsdb-client dump: %s", p.kind, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestOvsdbReplication runs active-backup replication in the three
// pairings with Debian's server (govs-govs, Debian active with govs backup,
// govs active with Debian backup): the backup gets the active's contents
// and every later commit, refuses writes with OVS's error, serves monitors
// (ovs-vsctl wait-until), and once the active is killed and the backup
// promoted, it holds every commit the active acknowledged, in its file too.
var ovsdbReadOnlyRe = regexp.MustCompile(`"(insert|update|mutate) operation not allowed when database server is in read only mode"`)

func TestOvsdbReplication(t *testing.T) {
	for _, pair := range [][2]string{{"govs", "govs"}, {"debian", "govs"}, {"govs", "debian"}} {
		t.Run(pair[0]+"-active-"+pair[1]+"-backup", func(t *testing.T) {
			active := ovsdbStart(t, ovsdbOpts{kind: pair[0]})
			active.mustVsctl("init", "--", "add-br", "br0", "--", "set", "bridge", "br0", "other_config:k=v")
			backup := ovsdbStart(t, ovsdbOpts{kind: pair[1], extra: []string{"--sync-from=unix:" + active.sock}})
			want := "state: backup\nreplicating: unix:" + active.sock + "\ndatabase: Open_vSwitch\n"
			ovsdbWait(t, vswTimeout, "replicating", func() bool {
				return backup.appctl("ovsdb-server/sync-status").stdout == want
			})
			if got := active.appctl("ovsdb-server/sync-status").stdout; got != "state: active\n" {
				t.Errorf("active sync-status %q", got)
			}

			// Commits after the initial copy, acknowledged one by one.
			for i := 1; i <= 20; i++ {
				active.mustVsctl("add-br", fmt.Sprintf("br%d", i), "--", "set", "open", ".", fmt.Sprintf("external_ids:n=%d", i))
			}
			active.mustVsctl("del-br", "br3", "--", "remove", "bridge", "br0", "other_config", "k")
			if r := backup.vsctl("wait-until", "Bridge", "br20"); r.code != 0 {
				t.Fatalf("wait-until on the backup: %s", r.stderr)
			}
			ovsdbWait(t, vswTimeout, "the backup to have the active's rows", func() bool {
				return ovsdbDumpLines(t, backup) == ovsdbDumpLines(t, active)
			})
			// ovs-vsctl orders its operations by hash: the first write
			// may be the insert or the update.
			r := backup.vsctl("--no-wait", "add-br", "nope")
			if r.code == 0 || !ovsdbReadOnlyRe.MatchString(r.stderr) {
				t.Errorf("write to the backup: exit %d, %q", r.code, r.stderr)
			}

			// Fail over: the active dies, the backup is promoted.
			before := ovsdbDumpLines(t, backup)
			active.kill9()
			if r := backup.appctl("ovsdb-server/disconnect-active-ovsdb-server"); r.code != 0 {
				t.Fatalf("disconnect-active-ovsdb-server: %s", r.stderr)
			}
			if got := backup.appctl("ovsdb-server/sync-status").stdout; got != "state: active\n" {
				t.Errorf("promoted sync-status %q", got)
			}
			if ovsdbDumpLines(t, backup) != before {
				t.Errorf("promotion changed the database")
			}
			backup.mustVsctl("add-br", "after")
			// What the backup replicated is in its file.
			backup.stop()
			backup.args = slices.DeleteFunc(backup.args, func(a string) bool { return a == "--sync-from=unix:"+active.sock })
			backup.start()
			got := backup.mustVsctl("list-br")
			wantBr := "after\nbr0\nbr1\nbr10\nbr11\nbr12\nbr13\nbr14\nbr15\nbr16\nbr17\nbr18\nbr19\nbr2\nbr20\nbr4\nbr5\nbr6\nbr7\nbr8\nbr9\n"
			if got != wantBr {
				t.Errorf("bridges after restart:\n%s\nwant:\n%s", got, wantBr)
			}
			if got := backup.mustVsctl("get", "open", ".", "external_ids:n"); got != "\"20\"\n" {
				t.Errorf("external_ids:n = %q", got)
			}
		})
	}
}

// TestOvsdbReplicationControl compares the replication commands' answers of
// Debian's ovsdb-server and govs', from start-up as active through
// replication, a changed exclusion list, self-replication and promotion.
func TestOvsdbReplicationControl(t *testing.T) {
	src := ovsdbStart(t, ovsdbOpts{kind: "debian"})
	src.mustVsctl("init", "--", "add-br", "b1")
	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	norm := func(p *ovsdbProc, s string) string {
		s = strings.ReplaceAll(s, src.sock, "SRC")
		return strings.ReplaceAll(s, p.dir, "DIR")
	}
	step := func(args ...string) {
		t.Helper()
		var outs [2]string
		for i, p := range servers {
			r := p.appctl(args...)
			outs[i] = norm(p, fmt.Sprintf("%s|%s|%d", r.stdout, r.stderr, r.code))
		}
		if outs[0] != outs[1] {
			t.Errorf("ovs-appctl %s:\ndebian: %q\ngovs:   %q", strings.Join(args, " "), outs[0], outs[1])
		}
	}
	waitBoth := func(what string, cond func(string) bool) {
		t.Helper()
		for _, p := range servers {
			ovsdbWait(t, vswTimeout, p.kind+" "+what, func() bool {
				return cond(norm(p, p.appctl("ovsdb-server/sync-status").stdout))
			})
		}
	}
	step("ovsdb-server/sync-status")
	step("ovsdb-server/get-active-ovsdb-server")
	step("ovsdb-server/get-sync-exclude-tables")
	step("ovsdb-server/connect-active-ovsdb-server")
	step("ovsdb-server/set-active-ovsdb-server")
	step("ovsdb-server/set-sync-exclude-tables", "x, Open_vSwitch:Bridge :y a:b:c,,")
	step("ovsdb-server/get-sync-exclude-tables")
	step("ovsdb-server/set-sync-exclude-tables", "")
	step("ovsdb-server/get-sync-exclude-tables")
	step("ovsdb-server/set-active-ovsdb-server-probe-interval", "x")
	step("ovsdb-server/set-active-ovsdb-server-probe-interval", "30000")
	step("ovsdb-server/set-active-ovsdb-server", "ssl:127.0.0.1:6640")
	step("ovsdb-server/get-active-ovsdb-server")
	step("ovsdb-server/set-active-ovsdb-server", "unix:"+src.sock)
	step("ovsdb-server/get-active-ovsdb-server")
	step("ovsdb-server/sync-status")
	step("ovsdb-server/connect-active-ovsdb-server")
	waitBoth("replicating", func(s string) bool { return strings.Contains(s, "replicating: unix:SRC") })
	step("ovsdb-server/sync-status")
	step("ovsdb-server/set-sync-exclude-tables", "Open_vSwitch:SSL,Open_vSwitch:Manager")
	waitBoth("replicating with exclusions", func(s string) bool { return strings.Contains(s, "exclude:") })
	step("ovsdb-server/sync-status")
	step("ovsdb-server/get-sync-exclude-tables")
	step("ovsdb-server/disconnect-active-ovsdb-server")
	step("ovsdb-server/sync-status")
	for _, p := range servers {
		if r := p.appctl("ovsdb-server/set-active-ovsdb-server", "unix:"+p.sock); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	step("ovsdb-server/connect-active-ovsdb-server")
	// Replicating from oneself fails, and the server is active again.
	waitBoth("self-replication refused", func(s string) bool { return s == "state: active\n" })
	for _, p := range servers {
		if !strings.Contains(p.readLog(), "|ovsdb_error|ERR|unexpected ovsdb error: Server ID check failed: Self replicating is not allowed") {
			t.Errorf("%s: no self-replication error in the log", p.kind)
		}
	}
}

// TestOvsdbReplicationSSL: a govs backup replicates from Debian's active
// server over ssl:, set with ovsdb-server/set-active-ovsdb-server, with
// certificates made by ovs-pki.
func TestOvsdbReplicationSSL(t *testing.T) {
	k := sslCerts(t)
	port := ovsdbFreePort(t)
	active := ovsdbStart(t, ovsdbOpts{kind: "debian", remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
		extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=" + k.ca}})
	active.mustVsctl("init", "--", "add-br", "br0")
	ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
	backup := ovsdbStart(t, ovsdbOpts{kind: "govs",
		extra: []string{"--private-key=" + k.cliKey, "--certificate=" + k.cliCert, "--ca-cert=" + k.ca}})
	target := fmt.Sprintf("ssl:127.0.0.1:%d", port)
	for _, args := range [][]string{{"ovsdb-server/set-active-ovsdb-server", target}, {"ovsdb-server/connect-active-ovsdb-server"}} {
		if r := backup.appctl(args...); r.code != 0 || r.stdout != "" {
			t.Fatalf("%s: exit %d %q %s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	want := "state: backup\nreplicating: " + target + "\ndatabase: Open_vSwitch\n"
	ovsdbWait(t, vswTimeout, "replicating over ssl", func() bool {
		return backup.appctl("ovsdb-server/sync-status").stdout == want
	})
	active.mustVsctl("add-br", "br1")
	if r := backup.vsctl("--timeout=30", "wait-until", "Bridge", "br1"); r.code != 0 {
		t.Fatalf("wait-until on the backup: %s\nlog:\n%s", r.stderr, backup.readLog())
	}
	ovsdbWait(t, vswTimeout, "the backup to have the active's rows", func() bool {
		return ovsdbDumpLines(t, backup) == ovsdbDumpLines(t, active)
	})
}
