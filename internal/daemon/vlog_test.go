package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	known := map[string]string{"jsonrpc": "jsonrpc", "ovsdb_server": "ovsdb_server"}
	lookup := func(w string) (string, bool) { n, ok := known[strings.ToLower(w)]; return n, ok }
	tests := []struct {
		spec string
		want Spec
		err  string
	}{
		{"", Spec{Dest: destAny, Level: LevelDbg}, ""},
		{"ANY:ANY:dbg", Spec{Dest: destAny, Level: LevelDbg}, ""},
		{"console:off", Spec{Dest: DestConsole, Level: LevelOff}, ""},
		{"file:info", Spec{Dest: DestFile, Level: LevelInfo}, ""},
		{"jsonrpc", Spec{Module: "jsonrpc", Dest: destAny, Level: LevelDbg}, ""},
		{"jsonrpc:file:dbg", Spec{Module: "jsonrpc", Dest: DestFile, Level: LevelDbg}, ""},
		{"dbg:file:jsonrpc", Spec{Module: "jsonrpc", Dest: DestFile, Level: LevelDbg}, ""},
		{"JSONRPC:SYSLOG:WARN", Spec{Module: "jsonrpc", Dest: DestSyslog, Level: LevelWarn}, ""},
		{"jsonrpc,console emer", Spec{Module: "jsonrpc", Dest: DestConsole, Level: LevelEmer}, ""},
		{"ovsdb_server:ANY:err", Spec{Module: "ovsdb_server", Dest: destAny, Level: LevelErr}, ""},
		{"::warn::", Spec{Dest: destAny, Level: LevelWarn}, ""},
		{"bogus", Spec{}, `no destination, level, or module "bogus"`},
		{"ANY:ANY:bogus", Spec{}, `no destination, level, or module "bogus"`},
		{"file:dbg:info", Spec{}, "cannot specify multiple levels"},
		{"file:console", Spec{}, "cannot specify multiple destinations"},
		{"jsonrpc:ovsdb_server", Spec{}, "cannot specify multiple modules"},
	}
	for _, tc := range tests {
		got, err := parseSpec(tc.spec, lookup)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("parseSpec(%q) err = %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSpec(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
}

// newTestLogger returns a Logger with a fixed clock and captured console.
func newTestLogger() (*Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	l := NewLogger(&buf)
	l.now = func() time.Time { return time.Date(2026, 11, 29, 20, 1, 50, 240_000_000, time.UTC) }
	return l, &buf
}

func TestLogLineFormat(t *testing.T) {
	l, console := newTestLogger()
	file := filepath.Join(t.TempDir(), "x.log")
	m := l.Module("jsonrpc")
	if err := l.SetLogFile(file); err != nil {
		t.Fatal(err)
	}
	m.Infof("hello %d", 42)
	m.Debugf("not shown") // default levels are INFO
	m.Warnf("careful")
	l.Module("ovsdb_server").Errorf("bad")
	m.Emerf("dying")
	l.Close()

	wantConsole := "2026-11-29T20:01:50Z|00001|vlog|INFO|opened log file " + file + "\n" +
		"2026-11-29T20:01:50Z|00002|jsonrpc|INFO|hello 42\n" +
		"2026-11-29T20:01:50Z|00003|jsonrpc|WARN|careful\n" +
		"2026-11-29T20:01:50Z|00004|ovsdb_server|ERR|bad\n" +
		"2026-11-29T20:01:50Z|00005|jsonrpc|EMER|dying\n"
	if console.String() != wantConsole {
		t.Errorf("console:\n%s\nwant:\n%s", console, wantConsole)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wantFile := strings.ReplaceAll(wantConsole, "50Z|", "50.240Z|")
	if string(data) != wantFile {
		t.Errorf("file:\n%s\nwant:\n%s", data, wantFile)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
		t.Errorf("log file mode %v, want 0640", fi.Mode().Perm())
	}
}

func TestLevelsAndList(t *testing.T) {
	l, console := newTestLogger()
	m := l.Module("jsonrpc")
	for _, spec := range []string{"console:off", "jsonrpc:console:dbg", "file:warn", "ANY:syslog:err"} {
		if err := l.Set(spec); err != nil {
			t.Fatal(err)
		}
	}
	late := l.Module("late_module") // registered after the specs: gets the defaults
	m.Debugf("shown")
	late.Errorf("not shown on console")
	if got := console.String(); got != "2026-11-29T20:01:50Z|00001|jsonrpc|DBG|shown\n" {
		t.Errorf("console = %q", got)
	}
	// Row layout as in Debian's ovsdb-server 3.1 "vlog/list" output.
	want := "                 console    syslog    file\n" +
		"                 -------    ------    ------\n" +
		"daemon_unix        OFF        ERR       WARN\n" +
		"fatal_signal       OFF        ERR       WARN\n" +
		"jsonrpc            DBG        ERR       WARN\n" +
		"late_module        OFF        ERR       WARN\n" +
		"unixctl            OFF        ERR       WARN\n" +
		"vlog               OFF        ERR       WARN\n"
	if got := l.ListLevels(); got != want {
		t.Errorf("vlog/list:\n%s\nwant:\n%s", got, want)
	}
	l.Module("dpif_lookup_autovalidator") // longer than the 16-column name field
	if !strings.Contains(l.ListLevels(), "\ndpif_lookup_autovalidator   OFF        ERR       WARN\n") {
		t.Errorf("long module row:\n%s", l.ListLevels())
	}
}

// countingStringer records whether a disabled log call formatted its args.
type countingStringer struct{ n *int }

func (c countingStringer) String() string { *c.n++; return "x" }

func TestDisabledLevelDoesNotFormat(t *testing.T) {
	l, console := newTestLogger()
	m := l.Module("m")
	n := 0
	m.Debugf("%v", countingStringer{&n})
	m.DebugRL(NewRateLimit(1, 1), "%v", countingStringer{&n})
	if n != 0 || console.Len() != 0 {
		t.Fatalf("disabled level formatted %d times, wrote %q", n, console)
	}
	// File level does not count while no file is open.
	if err := l.Set("file:dbg"); err != nil {
		t.Fatal(err)
	}
	if m.Enabled(LevelDbg) {
		t.Fatal("DBG enabled with file:dbg but no log file")
	}
	var nilLogger *ModuleLogger
	nilLogger.Errorf("discarded") // must not panic
}

func TestRateLimit(t *testing.T) {
	l, console := newTestLogger()
	m := l.Module("m")
	now := time.Unix(1000, 0)
	rl := NewRateLimit(6, 2) // one token per 10 s, bursts of 2
	rl.now = func() time.Time { return now }
	for i := range 5 {
		m.WarnRL(rl, "msg %d", i) // 0 and 1 pass, 2..4 dropped
		now = now.Add(time.Second)
	}
	now = now.Add(10 * time.Second) // t=15: one token back
	m.WarnRL(rl, "msg 5")
	m.WarnRL(rl, "msg 6") // dropped
	lines := strings.Split(strings.TrimSpace(console.String()), "\n")
	re := regexp.MustCompile(`\|m\|WARN\|(.*)$`)
	var got []string
	for _, line := range lines {
		got = append(got, re.FindStringSubmatch(line)[1])
	}
	want := []string{"msg 0", "msg 1",
		"Dropped 3 log messages in last 13 seconds (most recently, 11 seconds ago) due to excessive rate",
		"msg 5"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// vlog/disable-rate-limit lets every message of a module through
// without taking tokens; enable-rate-limit restores the limit; an unknown
// module is OVS's error.
func TestDisableRateLimit(t *testing.T) {
	l, console := newTestLogger()
	m, other := l.Module("m"), l.Module("other")
	rl := NewRateLimit(1, 1)
	if err := l.SetRateLimits([]string{"M"}, false); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.WarnRL(rl, "unlimited")
	}
	other.WarnRL(rl, "limited") // the bucket is still full: passes
	other.WarnRL(rl, "limited") // dropped
	if err := l.SetRateLimits(nil, true); err != nil {
		t.Fatal(err)
	}
	m.WarnRL(rl, "limited again") // dropped
	if err := l.SetRateLimits([]string{"m", "nosuch"}, false); err == nil || err.Error() != "unknown module" {
		t.Errorf("unknown module: %v", err)
	}
	if got := strings.Count(console.String(), "|WARN|"); got != 4 {
		t.Errorf("%d messages, want 4:\n%s", got, console.String())
	}
}

func TestReopenAndClose(t *testing.T) {
	l, _ := newTestLogger()
	if err := l.Reopen(); err == nil || err.Error() != "Logging to file not configured" {
		t.Fatalf("Reopen without file: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "d.log")
	if err := l.SetLogFile(file); err != nil {
		t.Fatal(err)
	}
	m := l.Module("m")
	m.Infof("one")
	if err := l.Reopen(); err != nil { // same file: no-op, no "opened" line
		t.Fatal(err)
	}
	if err := os.Rename(file, file+".1"); err != nil { // logrotate
		t.Fatal(err)
	}
	m.Infof("two")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	m.Infof("three")
	l.CloseLogFile()
	m.Infof("four")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	old, _ := os.ReadFile(file + ".1")
	cur, _ := os.ReadFile(file)
	if c := strings.Count(string(old), "\n"); c != 3 || !strings.Contains(string(old), "|m|INFO|two") {
		t.Errorf("rotated file:\n%s", old)
	}
	if strings.Contains(string(cur), "four") || strings.Count(string(cur), "opened log file") != 2 ||
		!strings.Contains(string(cur), "|m|INFO|three") {
		t.Errorf("current file:\n%s", cur)
	}
}
