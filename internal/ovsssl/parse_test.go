package ovsssl

import (
	"crypto/tls"
	"testing"
)

func TestParseProtocols(t *testing.T) {
	for _, tc := range []struct {
		in       string
		min, max uint16
		err      string
	}{
		{"TLSv1,TLSv1.1,TLSv1.2", tls.VersionTLS10, tls.VersionTLS12, ""},
		{"tlsv1.2", tls.VersionTLS12, tls.VersionTLS12, ""},
		{"TLSv1.2 TLSv1.1", tls.VersionTLS11, tls.VersionTLS12, ""},
		{"TLSv1\tTLSv1.2", tls.VersionTLS10, tls.VersionTLS10, ""}, // a gap ends the run, as in OpenSSL
		{"", 0, 0, "SSL protocol settings invalid"},
		{" , ", 0, 0, "SSL protocol settings invalid"},
		{"TLSv9", 0, 0, "TLSv9: SSL protocol not recognized"},
		{"TLSv1.2,TLSv1.3", 0, 0, "TLSv1.3: SSL protocol not recognized"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			min, max, err := ParseProtocols(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || min != tc.min || max != tc.max {
				t.Fatalf("got %x..%x %v, want %x..%x", min, max, err, tc.min, tc.max)
			}
		})
	}
}

func TestParseCiphers(t *testing.T) {
	names := func(ids []uint16) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			for _, s := range suites {
				if s.id == id {
					m[s.name] = true
				}
			}
		}
		return m
	}
	for _, tc := range []struct {
		in      string
		has     []string
		hasnt   []string
		ignored int
		err     bool
	}{
		{DefaultCiphers, []string{"ECDHE-RSA-AES128-GCM-SHA256", "AES256-SHA"}, []string{"DES-CBC3-SHA", "RC4-SHA"}, 0, false},
		{"ECDHE+AESGCM", []string{"ECDHE-RSA-AES256-GCM-SHA384"}, []string{"AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA"}, 0, false},
		{"HIGH:!kRSA", []string{"ECDHE-RSA-AES128-SHA"}, []string{"AES128-SHA"}, 0, false},
		{"AES128-SHA:DHE-RSA-AES256-GCM-SHA384", []string{"AES128-SHA"}, nil, 1, false},
		{"!AES:AES", nil, nil, 0, true},
		{"ALL:-AES:AES128-SHA", []string{"AES128-SHA"}, []string{"AES256-SHA"}, 0, false},
		{"FOO", nil, nil, 1, true},
		{"HIGH:@STRENGTH:@SECLEVEL=2", []string{"AES256-SHA"}, nil, 1, false},
		{"", nil, nil, 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ids, ignored, err := ParseCiphers(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if err != nil && err.Error() != "SSL_CTX_set_cipher_list: error:0A0000B9:SSL routines::no cipher match" {
				t.Fatalf("error text %q", err)
			}
			if len(ignored) != tc.ignored {
				t.Fatalf("ignored %q, want %d", ignored, tc.ignored)
			}
			got := names(ids)
			for _, n := range tc.has {
				if !got[n] {
					t.Errorf("%s not selected: %v", n, got)
				}
			}
			for _, n := range tc.hasnt {
				if got[n] {
					t.Errorf("%s selected", n)
				}
			}
		})
	}
}

func FuzzParseProtocols(f *testing.F) {
	for _, s := range []string{"TLSv1,TLSv1.1,TLSv1.2", "TLSv1.2", " ", "tlsv1\ttlsv1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		min, max, err := ParseProtocols(s)
		if err == nil && (min == 0 || max < min) {
			t.Fatalf("%q: range %x..%x", s, min, max)
		}
	})
}

func FuzzParseCiphers(f *testing.F) {
	for _, s := range []string{DefaultCiphers, "ECDHE+AESGCM:!aNULL", "-AES:+RC4:@STRENGTH", "ALL:COMPLEMENTOFDEFAULT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, _, err := ParseCiphers(s)
		if (err == nil) != (len(ids) > 0) {
			t.Fatalf("%q: %d suites, error %v", s, len(ids), err)
		}
		seen := map[uint16]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%q: suite %x twice", s, id)
			}
			seen[id] = true
		}
	})
}
