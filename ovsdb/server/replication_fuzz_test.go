package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/ovsdb/db"
)

// FuzzSyncExclude checks that the exclusion list parser takes anything, as
// ovsdb-server's does, and that what get-sync-exclude-tables prints parses
// back to the same list (but for entries of colons only, which
// ovsdb-server's strtok_r split grows by one colon each time).
func FuzzSyncExclude(f *testing.F) {
	for _, s := range []string{"", "Open_vSwitch:Bridge,Open_vSwitch:Port", "x, :y a:b:c,,", "::", "OVN_Southbound:Chassis_Private"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		list := ParseSyncExclude(spec)
		if slices.ContainsFunc(list, func(e string) bool { return strings.Trim(e, ":") == "" }) {
			return
		}
		if again := ParseSyncExclude(strings.Join(list, ",")); !slices.Equal(again, list) {
			t.Errorf("%q parses to %q, which parses to %q", spec, list, again)
		}
	})
}

// FuzzReplicaUpdates feeds arbitrary <table-updates> from an "active
// server" to a backup's database: no panic, and updates it accepted change
// nothing when applied again.
func FuzzReplicaUpdates(f *testing.F) {
	f.Add(`{"Bridge":{"6a3f9cd1-5d06-4a55-a4ba-4b2b0bda4b91":{"new":{"name":"br0","other_config":["map",[["k","v"]]]}}}}`, true)
	f.Add(`{"Bridge":{"6a3f9cd1-5d06-4a55-a4ba-4b2b0bda4b91":{"old":{"name":"br0"}}}}`, false)
	f.Add(`{"Open_vSwitch":{"not-a-uuid":{"new":{}}}}`, false)
	f.Add(`{"Nope":{}}`, true)
	srv, _ := testServer(f, Options{})
	e := srv.entry("Open_vSwitch")
	r := &replRun{srv: srv}
	commits := 0 // guarded by e.d's lock
	e.d.Subscribe(func(*db.Commit) { commits++ })
	f.Fuzz(func(t *testing.T, updates string, initial bool) {
		if !json.Valid([]byte(updates)) {
			return
		}
		if r.apply(e, json.RawMessage(updates), initial) != nil {
			return
		}
		var n int
		e.d.Read(func(db.Snapshot) { n = commits })
		if err := r.apply(e, json.RawMessage(updates), initial); err != nil {
			t.Fatalf("accepted once, refused again: %v", err)
		}
		e.d.Read(func(db.Snapshot) {
			if commits != n {
				t.Errorf("%s applied twice committed twice", updates)
			}
		})
	})
}
