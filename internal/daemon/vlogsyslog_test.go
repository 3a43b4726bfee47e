package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The expected texts below are Debian's ovsdb-server 3.1 for the same
// vlog/set commands and options.
func TestVlogPatternAsDebian(t *testing.T) {
	r := record{
		t:       time.Date(2026, 12, 1, 20, 19, 57, 365e6, time.UTC),
		seq:     11,
		module:  "jsonrpc",
		level:   LevelDbg,
		msg:     "send reply\n",
		program: "ovsdb-server",
		start:   time.Date(2026, 12, 1, 20, 19, 56, 419e6, time.UTC),
	}
	r.facility = syslogFacilities["local3"]
	got := formatPattern("%-10A|%5p|%t|%T|%r|%B|%D{%H}|%c{abc}|%-7N|%07N|%m|%D|%% %q", &r)
	want := "ovsdb-server|  DBG|main||946|159|20|jsonrpc|11     |0000011|send reply|2026-12-01 20:19:57.365|% q"
	if got != want {
		t.Errorf("formatPattern:\n got %q\nwant %q", got, want)
	}
	r.subprogram, r.facility, r.level = "monitor", 0, LevelWarn
	if got, want := formatPattern(defaultPatterns[DestFile], &r), "2026-12-01T20:19:57.365Z|00011|jsonrpc(monitor)|WARN|send reply"; got != want {
		t.Errorf("file pattern: got %q, want %q", got, want)
	}
	if got, want := formatPattern("%B", &r), "132"; got != want {
		t.Errorf("%%B without a facility: got %q, want %q", got, want)
	}
}

func TestVlogSetPatternAndFacility(t *testing.T) {
	l := NewLogger(nil)
	l.SetSyslogMethod("null")
	for _, tc := range []struct{ spec, err string }{
		{"PATTERN", "missing destination"},
		{"PATTERN:", "missing destination"},
		{"PATTERN:bogus:%m", `unknown destination "bogus"`},
		{"FACILITY", "invalid facility"},
		{"FACILITY:bogus", "invalid facility"},
		{"FACILITY:local3:x", "invalid facility"},
		{"facility:LOCAL3", ""},
		{"PATTERN:any:%m", ""},
		{"pattern:Console:x:y", ""},
		{"PATTERN:file", ""},
	} {
		err := l.Set(tc.spec)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Set(%q) = %v, want %q", tc.spec, err, tc.err)
		}
	}
	want := "         prefix                            format\n" +
		"         ------                            ------\n" +
		"SYSLOG                                     %m\n" +
		"CONSOLE  none                              x:y\n" +
		"FILE     none                              \n"
	if got := l.ListPatterns(); got != want {
		t.Errorf("ListPatterns:\n%s\nwant\n%s", got, want)
	}
	if l.facility != 19<<3 {
		t.Errorf("facility = %d", l.facility)
	}
}

func TestVlogListPatternDefault(t *testing.T) {
	l := NewLogger(nil)
	want := "         prefix                            format\n" +
		"         ------                            ------\n" +
		"SYSLOG   <%B> %D{%h %e %T} %E %A:          ovs|%05N|%c%T|%p|%m\n" +
		"CONSOLE  none                              %D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m\n" +
		"FILE     none                              %D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m\n"
	if os.Getenv("OVS_SYSLOG_METHOD") == "" {
		if got := l.ListPatterns(); got != want {
			t.Errorf("ListPatterns:\n%s\nwant\n%s", got, want)
		}
	}
}

// TestVlogSyslogDatagrams checks what --syslog-method=unix:FILE and
// --syslog-target send, byte for byte as Debian's ovsdb-server sent them
// to the same listeners.
func TestVlogSyslogDatagrams(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sl")
	ux, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()

	l := NewLogger(nil)
	l.SetProgram("ovsdb-server")
	if err := l.SetSyslogMethod("unix:" + sock); err != nil {
		t.Fatal(err)
	}
	if err := l.SetSyslogMethod("null"); err != nil { // only the first counts
		t.Fatal(err)
	}
	if err := l.SetSyslogTarget(udp.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	l.Module("ovsdb_server").Infof("ovsdb-server (Open vSwitch) 3.1.0")

	read := func(c net.PacketConn) string {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	host, _ := os.Hostname()
	pid := strconv.Itoa(os.Getpid())
	if got, want := read(ux), "<28>ovs|00001|vlog|WARN|--syslog-target flag is deprecated, use --syslog-method instead"; got != want {
		t.Errorf("unix: got %q, want %q", got, want)
	}
	got := read(udp)
	if !strings.HasPrefix(got, "<132>1 ") || !strings.HasSuffix(got, "Z "+host+" ovsdb-server "+pid+" vlog - \xef\xbb\xbf--syslog-target flag is deprecated, use --syslog-method instead") {
		t.Errorf("target: got %q", got)
	}
	if got, want := read(ux), "<29>ovs|00002|ovsdb_server|INFO|ovsdb-server (Open vSwitch) 3.1.0"; got != want {
		t.Errorf("unix: got %q, want %q", got, want)
	}
	if got := read(udp); !strings.HasPrefix(got, "<133>1 ") {
		t.Errorf("target: got %q", got)
	}
	if err := l.Set("FACILITY:local3"); err != nil {
		t.Fatal(err)
	}
	l.Module("ovsdb_server").Errorf("two\nlines")
	if got, want := read(ux), "<155>ovs|00003|ovsdb_server|ERR|two"; got != want {
		t.Errorf("unix: got %q, want %q", got, want)
	}
	if got, want := read(ux), "<155>lines"; got != want {
		t.Errorf("unix: got %q, want %q", got, want)
	}
}

// FuzzFormatPattern renders arbitrary patterns (vlog/set PATTERN: takes
// any text): it must never panic, and text without '%' or '#' passes
// through unchanged.
func FuzzFormatPattern(f *testing.F) {
	for _, p := range defaultPatterns {
		f.Add(p)
	}
	f.Add("%-10A|%5p|%t|%T|%r|%B|%D{%H}|%d{%Y}|%c{abc}|%-7N|%07N|%m")
	f.Add("%D{%q %% ### %e}%")
	f.Add("%c{")
	f.Add("%-")
	f.Fuzz(func(t *testing.T, pattern string) {
		r := record{t: time.Unix(1, 5e6), seq: 3, module: "m", level: LevelInfo, msg: "x", program: "p", start: time.Unix(0, 0)}
		got := formatPattern(pattern, &r)
		if !strings.ContainsAny(pattern, "%#") && got != pattern {
			t.Errorf("formatPattern(%q) = %q", pattern, got)
		}
	})
}
