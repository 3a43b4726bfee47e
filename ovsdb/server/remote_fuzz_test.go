package server

import (
	"strings"
	"testing"
)

// FuzzValidateRemote checks that any remote string is either refused or
// has an address the listener and dialer accept.
func FuzzValidateRemote(f *testing.F) {
	for _, s := range []string{"pssl:6640", "pssl:0:127.0.0.1", "pssl:6640:[::1]", "ssl:127.0.0.1:6640",
		"ssl:[::1]:6640", "ptcp:", "tcp:h", "punix:/x", "db:a,b,c", "ssl:", "pssl:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateRemote(s) != nil {
			return
		}
		kind, rest, _ := strings.Cut(s, ":")
		var err error
		switch kind {
		case "pssl", "ptcp":
			_, err = listenAddr(rest)
		case "ssl", "tcp":
			_, err = dialAddr(rest)
		}
		if err != nil {
			t.Fatalf("%q accepted but its address is not: %v", s, err)
		}
	})
}

func TestParseRelay(t *testing.T) {
	for _, tc := range []struct{ in, name, sources, err string }{
		{"relay:OVN_Southbound:tcp:10.0.0.1:6642,ssl:10.0.0.2:6642", "OVN_Southbound", "tcp:10.0.0.1:6642 ssl:10.0.0.2:6642", ""},
		{"relay:Open_vSwitch:unix:/run/db.sock", "Open_vSwitch", "unix:/run/db.sock", ""},
		{"relay:Open_vSwitch", "", "", "ovsdb error: relay:Open_vSwitch: invalid syntax"},
		{"relay:Open_vSwitch:", "", "", "relay:Open_vSwitch:: invalid syntax (relay:DB_NAME:REMOTE[,REMOTE]...)"},
		{"relay:Open_vSwitch:ptcp:6640:127.0.0.1,punix:/run/r.sock", "Open_vSwitch", "ptcp:6640:127.0.0.1 punix:/run/r.sock", ""},
		{"relay:Open_vSwitch:db:Open_vSwitch,Open_vSwitch,manager_options", "", "",
			"relay:Open_vSwitch:db:Open_vSwitch,Open_vSwitch,manager_options: db:Open_vSwitch: a relay source is a remote, not a db: reference"},
		{"relay:Open_vSwitch:ptcp:x", "", "", "relay:Open_vSwitch:ptcp:x: x: bad port number"},
	} {
		name, sources, err := ParseRelay(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name || strings.Join(sources, " ") != tc.sources {
			t.Errorf("%s: %q %q %v", tc.in, name, sources, err)
		}
	}
}

// FuzzParseRelay: an accepted relay argument has a name and only remotes
// that pass ValidateRemote, none a db: reference.
func FuzzParseRelay(f *testing.F) {
	for _, s := range []string{"relay:OVN_Southbound:tcp:127.0.0.1:6642,ssl:[::1]:6642", "relay:x", "relay:a:unix:/s,", "relay::tcp:1", "relay:a:ptcp:0:127.0.0.1,punix:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, sources, err := ParseRelay(s)
		if err != nil {
			return
		}
		if name == "" || len(sources) == 0 {
			t.Fatalf("%q: accepted with name %q, sources %q", s, name, sources)
		}
		for _, r := range sources {
			if ValidateRemote(r) != nil || strings.HasPrefix(r, "db:") {
				t.Fatalf("%q: source %q accepted", s, r)
			}
		}
	})
}
