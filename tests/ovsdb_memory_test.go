package tests

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOvsdbMemoryShowDifferential drives Debian's ovsdb-server and govs'
// through the same states and compares "ovs-appctl memory/show" line for
// line: rows with maps and weak references (a mirror), monitors that
// share a monitored set and one that does not, a conditional monitor, a
// transaction waiting on a "wait", and what remains once the clients are
// gone. It also compares list-commands and the answers of the commands
// govs gained with it. About 3 s.
func TestOvsdbMemoryShowDifferential(t *testing.T) {
	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	show := func(p *ovsdbProc) string {
		r := p.appctl("memory/show")
		if r.code != 0 {
			t.Fatalf("%s: memory/show: exit %d: %s", p.kind, r.code, r.stderr)
		}
		return r.stdout
	}
	// compare waits until each server's memory/show contains every one
	// of wants (the clients' sessions and requests reached the server:
	// a session connects before its monitor request arrives), then
	// compares them whole.
	compare := func(step string, wants ...string) {
		t.Helper()
		var got [2]string
		for i, p := range servers {
			ovsdbWait(t, 10*time.Second, p.kind+" memory/show with "+strings.Join(wants, " "), func() bool {
				got[i] = show(p)
				for _, want := range wants {
					if !strings.Contains(got[i], want) {
						return false
					}
				}
				return true
			})
		}
		if got[0] != got[1] {
			t.Errorf("%s: memory/show\ndebian: %q\ngovs:   %q", step, got[0], got[1])
		}
	}
	// background starts a client that runs until the test stops it by
	// its process.
	var procs []*exec.Cmd
	background := func(p *ovsdbProc, args ...string) *exec.Cmd {
		cmd := exec.Command(ovsdbClient, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		return cmd
	}
	stopAll := func() {
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
		procs = nil
	}
	t.Cleanup(stopAll)

	compare("empty", "cells:")
	for _, p := range servers {
		p.mustVsctl("init", "--", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "add-port", "br0", "p2",
			"--", "set", "bridge", "br0", "external_ids:a=b")
		p.mustVsctl("--", "--id=@p", "get", "port", "p1", "--", "--id=@q", "get", "port", "p2",
			"--", "--id=@m", "create", "mirror", "name=m1", "select_src_port=@p,@q", "output_port=@q",
			"--", "add", "bridge", "br0", "mirrors", "@m")
	}
	compare("rows", "n-weak-refs:3")
	for _, p := range servers {
		db := "unix:" + p.sock
		background(p, "monitor", db, "Open_vSwitch", "Bridge")
		background(p, "monitor", db, "Open_vSwitch", "Bridge")
		background(p, "monitor", db, "Open_vSwitch", "Port", "name")
		background(p, "monitor-cond", db, "Open_vSwitch", `[["name","==","p1"]]`, "Port", "name")
	}
	// Two monitored sets: Bridge (shared by two clients) and Port's name
	// (shared by the plain and the conditional monitor).
	compare("monitors", "monitors:2 ", "sessions:4")
	for _, p := range servers {
		background(p, "transact", "unix:"+p.sock, `["Open_vSwitch",{"op":"wait","table":"Bridge","where":[],`+
			`"columns":["name"],"until":"==","rows":[],"timeout":30000}]`)
	}
	compare("waiting transaction", "triggers:1")
	stopAll()
	for _, p := range servers {
		ovsdbWait(t, 10*time.Second, p.kind+" sessions gone", func() bool { return !strings.Contains(show(p), "sessions:") })
		p.mustVsctl("del-port", "p2")
	}
	compare("after", "n-weak-refs:1")

	cmds := [][]string{
		{"list-commands"},
		{"memory/show", "x"},
		{"ovsdb-server/get-db-storage-status", "Open_vSwitch"},
		{"ovsdb-server/get-db-storage-status", "_Server"},
		{"ovsdb-server/get-db-storage-status", "nope"},
		{"ovsdb-server/memory-trim-on-compaction", "on"},
		{"ovsdb-server/memory-trim-on-compaction", "maybe"},
		{"ovsdb-server/compact"},
		{"ovsdb-server/memory-trim-on-compaction", "off"},
		{"ovsdb-server/perf-counters-show"},
		{"ovsdb-server/perf-counters-clear"},
		{"ovsdb-server/reconnect"},
	}
	for _, c := range cmds {
		var got [2]string
		for i, p := range servers {
			r := p.appctl(c...)
			got[i] = strings.ReplaceAll(r.stdout+r.stderr, p.ctl, "CTL") + " exit " + strconv.Itoa(r.code)
		}
		if got[0] != got[1] {
			t.Errorf("ovs-appctl %s:\ndebian: %q\ngovs:   %q", strings.Join(c, " "), got[0], got[1])
		}
	}
	for _, p := range servers {
		for _, want := range []string{"|ovsdb_server|INFO|memory trimming after compaction enabled.",
			"|ovsdb_server|INFO|memory trimming after compaction disabled."} {
			if !strings.Contains(p.readLog(), want) {
				t.Errorf("%s: log lacks %q", p.kind, want)
			}
		}
	}
	r := servers[1].appctl("coverage/show")
	if r.code != 2 || !strings.Contains(r.stderr, "coverage/show is not supported by govs' ovsdb-server") {
		t.Errorf("govs coverage/show: exit %d %q %q, want a refusal by name", r.code, r.stdout, r.stderr)
	}
}
