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
