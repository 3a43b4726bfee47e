package daemon

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Level is a vlog severity. Higher values are more verbose; a destination
// set to level L receives messages of level L and below.
type Level int32

// The vlog levels, from least to most verbose.
const (
	LevelOff Level = iota
	LevelEmer
	LevelErr
	LevelWarn
	LevelInfo
	LevelDbg
)

var levelNames = [...]string{"OFF", "EMER", "ERR", "WARN", "INFO", "DBG"}

// String returns OVS's upper-case level name ("INFO").
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// Destination is where log messages go.
type Destination int

// The vlog destinations. Syslog messages go through the --syslog-method
// (by default the local syslog socket, /dev/log, as OVS's libc method).
const (
	DestConsole Destination = iota
	DestSyslog
	DestFile
	numDests
	destAny Destination = -1
)

var destNames = [...]string{"console", "syslog", "file"}

// String returns the destination's name ("console"), or "ANY".
func (d Destination) String() string {
	if d < 0 || d >= numDests {
		return "ANY"
	}
	return destNames[d]
}

// Logger is one process's vlog state: the registered modules, their levels,
// the console writer and the optional log file. It is safe for concurrent
// use. Output goes through logrus loggers (one per destination) with a
// formatter that produces vlog lines.
type Logger struct {
	mu       sync.Mutex
	modules  map[string]*ModuleLogger // by lower-case name
	defaults [numDests]Level          // levels for modules registered later
	seq      uint64
	now      func() time.Time

	console     *logrus.Logger
	file        *logrus.Logger
	logFile     *os.File // nil when no file is open
	logFileName string   // "" when logging to a file is not configured
	subprogram  string   // "" or a name shown after the module: "daemon_unix(monitor)"

	patterns     [numDests]string // "PATTERN:destination:pattern"
	facility     int              // "FACILITY:name"; 0 for the default
	program      string           // %A
	start        time.Time        // %r counts from here
	syslog       syslogger        // nil until the first syslog message
	syslogMethod string           // "" for $OVS_SYSLOG_METHOD, then "libc"
	syslogTarget net.Conn         // --syslog-target, or nil

	self *ModuleLogger // module "vlog"
}

// NewLogger returns a Logger writing console output to console (normally
// os.Stderr). Like OVS, every destination starts at INFO. The modules
// "vlog", "unixctl", "daemon_unix" and "fatal_signal" used by this package
// are registered.
func NewLogger(console io.Writer) *Logger {
	if console == nil {
		console = io.Discard
	}
	l := &Logger{
		modules:  make(map[string]*ModuleLogger),
		defaults: [numDests]Level{LevelInfo, LevelInfo, LevelInfo},
		now:      time.Now,
		console:  newVlogOutput(console),
		file:     newVlogOutput(io.Discard),
		patterns: defaultPatterns,
		program:  filepath.Base(os.Args[0]),
		start:    time.Now(),
	}
	l.self = l.Module("vlog")
	for _, m := range []string{"unixctl", "daemon_unix", "fatal_signal"} {
		l.Module(m)
	}
	return l
}

func newVlogOutput(w io.Writer) *logrus.Logger {
	lg := logrus.New()
	lg.SetOutput(w)
	lg.SetFormatter(vlogFormatter{})
	lg.SetLevel(logrus.DebugLevel) // filtering is ours
	lg.SetNoLock()                 // Logger.mu serializes all writes
	return lg
}

// Module returns the logger for module name, registering it on first use
// with the current default levels. Module names are case-insensitive and
// conventionally lower_case_with_underscores, as in OVS ("jsonrpc").
//
// Level specs (-v, vlog/set) can only name registered modules, so a daemon
// should register all its modules before Start applies the command line.
func (l *Logger) Module(name string) *ModuleLogger {
	key := strings.ToLower(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.modules[key]; ok {
		return m
	}
	m := &ModuleLogger{l: l, name: name}
	for d := range numDests {
		m.levels[d].Store(int32(l.defaults[d]))
	}
	m.updateMaxLocked()
	l.modules[key] = m
	return m
}

// Set applies one vlog spec, as given to -v/--verbose or "vlog/set": words
// separated by ':', ',', space or tab, each a module name, a destination
// (console, syslog, file), a level (off, emer, err, warn, info, dbg) or ANY.
// An omitted module or destination means all; an omitted level means dbg.
// The errors are OVS's texts.
func (l *Logger) Set(spec string) error {
	if w, rest, _ := strings.Cut(spec, ":"); strings.EqualFold(w, "PATTERN") {
		return l.setPattern(rest, strings.Contains(spec, ":"))
	} else if strings.EqualFold(w, "FACILITY") {
		return l.setFacility(rest)
	}
	s, err := l.ParseSpec(spec)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var targets []*ModuleLogger
	if s.Module == "" {
		for _, m := range l.modules {
			targets = append(targets, m)
		}
	} else {
		targets = append(targets, l.modules[strings.ToLower(s.Module)])
	}
	for d := range numDests {
		if s.Dest != destAny && s.Dest != d {
			continue
		}
		if s.Module == "" {
			l.defaults[d] = s.Level
		}
		for _, m := range targets {
			m.levels[d].Store(int32(s.Level))
		}
	}
	for _, m := range targets {
		m.updateMaxLocked()
	}
	return nil
}

// Spec is a parsed vlog spec. Module "" and Dest < 0 mean all.
type Spec struct {
	Module string
	Dest   Destination
	Level  Level
}

// ParseSpec parses a vlog spec (see Set) against the registered modules
// without applying it.
func (l *Logger) ParseSpec(spec string) (Spec, error) {
	return parseSpec(spec, func(name string) (string, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		m, ok := l.modules[strings.ToLower(name)]
		if !ok {
			return "", false
		}
		return m.name, true
	})
}

func parseSpec(spec string, lookup func(string) (string, bool)) (Spec, error) {
	s := Spec{Dest: destAny, Level: -1}
	words := strings.FieldsFunc(spec, func(r rune) bool {
		return r == ':' || r == ',' || r == ' ' || r == '\t'
	})
	for _, w := range words {
		if strings.EqualFold(w, "ANY") {
			continue
		}
		if d, ok := parseDestination(w); ok {
			if s.Dest != destAny {
				return s, errors.New("cannot specify multiple destinations")
			}
			s.Dest = d
		} else if lv, ok := parseLevel(w); ok {
			if s.Level >= 0 {
				return s, errors.New("cannot specify multiple levels")
			}
			s.Level = lv
		} else if name, ok := lookup(w); ok {
			if s.Module != "" {
				return s, errors.New("cannot specify multiple modules")
			}
			s.Module = name
		} else {
			return s, fmt.Errorf("no destination, level, or module \"%s\"", w)
		}
	}
	if s.Level < 0 {
		s.Level = LevelDbg
	}
	return s, nil
}

func parseDestination(w string) (Destination, bool) {
	for i, n := range destNames {
		if strings.EqualFold(w, n) {
			return Destination(i), true
		}
	}
	return 0, false
}

func parseLevel(w string) (Level, bool) {
	for i, n := range levelNames {
		if strings.EqualFold(w, n) {
			return Level(i), true
		}
	}
	return 0, false
}

// ListLevels returns the "vlog/list" table, in OVS's format.
func (l *Logger) ListLevels() string {
	l.mu.Lock()
	mods := make([]*ModuleLogger, 0, len(l.modules))
	for _, m := range l.modules {
		mods = append(mods, m)
	}
	l.mu.Unlock()
	sort.Slice(mods, func(i, j int) bool { return mods[i].name < mods[j].name })
	var b strings.Builder
	b.WriteString("                 console    syslog    file\n")
	b.WriteString("                 -------    ------    ------\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "%-16s  %4s       %4s       %4s\n", m.name,
			m.Level(DestConsole), m.Level(DestSyslog), m.Level(DestFile))
	}
	return b.String()
}

// ListPatterns returns the "vlog/list-pattern" table, in OVS's format.
func (l *Logger) ListPatterns() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	row := func(a, b2, c string) { fmt.Fprintf(&b, "%-8s %-33s %s\n", a, b2, c) }
	row("", "prefix", "format")
	row("", "------", "------")
	row("SYSLOG", l.syslogLocked().prefix(), l.patterns[DestSyslog])
	row("CONSOLE", "none", l.patterns[DestConsole])
	row("FILE", "none", l.patterns[DestFile])
	return b.String()
}

// SetLogFile starts logging to the file at path (appending, mode 0640),
// closing any previous log file. Like OVS, it logs "opened log file PATH".
// On failure the file destination stays configured, so a later Reopen may
// succeed.
func (l *Logger) SetLogFile(path string) error {
	l.mu.Lock()
	l.logFileName = path
	l.mu.Unlock()
	return l.openLogFile(true)
}

// Reopen reopens the log file, e.g. after logrotate moved it ("vlog/reopen").
// It does nothing if the open file is still the one at the configured path.
func (l *Logger) Reopen() error {
	return l.openLogFile(false)
}

// CloseLogFile closes the log file; file logging stays configured and resumes
// on Reopen ("vlog/close").
func (l *Logger) CloseLogFile() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logFile != nil {
		l.file.SetOutput(io.Discard)
		l.logFile.Close()
		l.logFile = nil
		l.updateAllMaxLocked()
	}
}

// LogFileName returns the configured log file path, or "".
func (l *Logger) LogFileName() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logFileName
}

func (l *Logger) openLogFile(force bool) error {
	l.mu.Lock()
	name := l.logFileName
	if name == "" {
		l.mu.Unlock()
		return errors.New("Logging to file not configured")
	}
	if !force && l.logFile != nil {
		cur, err1 := l.logFile.Stat()
		now, err2 := os.Stat(name)
		if err1 == nil && err2 == nil && os.SameFile(cur, now) {
			l.mu.Unlock()
			return nil
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		l.mu.Unlock()
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("failed to open %s for logging: %w", name, err)
	}
	if l.logFile != nil {
		l.logFile.Close()
	}
	l.logFile = f
	l.file.SetOutput(f)
	// A panic or fatal error goes to the log file too, not only to
	// stderr, which a detached daemon has pointed at /dev/null: OVS's
	// daemons log their fatal signals' backtraces there.
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		l.mu.Unlock()
		l.self.Warnf("crash output to %s: %v", name, err)
		l.mu.Lock()
	}
	l.updateAllMaxLocked()
	l.mu.Unlock()
	l.self.Infof("opened log file %s", name)
	return nil
}

// Close closes the log file. The Logger keeps logging to the console.
func (l *Logger) Close() error {
	l.CloseLogFile()
	return nil
}

// SetSubprogram makes every later line name its module as
// "module(name)", as OVS's subprogram names do (the --monitor process logs
// as "daemon_unix(monitor)").
func (l *Logger) SetSubprogram(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subprogram = name
}

// SetConsoleOff turns off console logging for all modules, as a daemon does
// once it has detached and its stderr is /dev/null.
func (l *Logger) SetConsoleOff() {
	_ = l.Set("console:off")
}

func (l *Logger) updateAllMaxLocked() {
	for _, m := range l.modules {
		m.updateMaxLocked()
	}
}

// ModuleLogger logs for one module. Its methods are safe for concurrent use,
// and a nil *ModuleLogger discards everything, so packages can take one as
// an optional dependency. A disabled level costs an atomic load: arguments
// are not formatted.
type ModuleLogger struct {
	l      *Logger
	name   string
	levels [numDests]atomic.Int32
	max    atomic.Int32 // most verbose level any active destination takes
	// unlimited: vlog/disable-rate-limit turned the module's rate
	// limits off (OVS's honor_rate_limits false).
	unlimited atomic.Bool
}

// SetRateLimits turns the rate limits of the named modules (all of them
// for none, or for "ANY" among them) on or off, as OVS's
// vlog/enable-rate-limit and vlog/disable-rate-limit; an unknown name
// fails with OVS's error, after the names before it took effect.
func (l *Logger) SetRateLimits(names []string, enable bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := func() {
		for _, m := range l.modules {
			m.unlimited.Store(!enable)
		}
	}
	if len(names) == 0 {
		all()
	}
	for _, n := range names {
		if strings.EqualFold(n, "ANY") {
			all()
			continue
		}
		m, ok := l.modules[strings.ToLower(n)]
		if !ok {
			return errors.New("unknown module")
		}
		m.unlimited.Store(!enable)
	}
	return nil
}

// Sibling returns the logger of module name in m's Logger, for code
// handed one module's logger that logs some messages under another, as
// OVS's files each have their own module.
func (m *ModuleLogger) Sibling(name string) *ModuleLogger { return m.l.Module(name) }

// Name returns the module name.
func (m *ModuleLogger) Name() string { return m.name }

// Level returns the module's level for destination d.
func (m *ModuleLogger) Level(d Destination) Level { return Level(m.levels[d].Load()) }

// Enabled reports whether a message at lvl would be written anywhere.
func (m *ModuleLogger) Enabled(lvl Level) bool {
	return m != nil && lvl > LevelOff && Level(m.max.Load()) >= lvl
}

// updateMaxLocked recomputes max; the caller holds l.mu. The file only
// counts while open, as in OVS's min_level.
func (m *ModuleLogger) updateMaxLocked() {
	max := maxLevel(m.Level(DestConsole), m.Level(DestSyslog))
	if m.l.logFile != nil {
		max = maxLevel(max, m.Level(DestFile))
	}
	m.max.Store(int32(max))
}

func maxLevel(a, b Level) Level {
	if a > b {
		return a
	}
	return b
}

// Logf logs at lvl.
func (m *ModuleLogger) Logf(lvl Level, format string, args ...any) {
	if m.Enabled(lvl) {
		m.emit(lvl, fmt.Sprintf(format, args...))
	}
}

// Emerf logs at EMER.
func (m *ModuleLogger) Emerf(format string, args ...any) { m.Logf(LevelEmer, format, args...) }

// Errorf logs at ERR.
func (m *ModuleLogger) Errorf(format string, args ...any) { m.Logf(LevelErr, format, args...) }

// Warnf logs at WARN.
func (m *ModuleLogger) Warnf(format string, args ...any) { m.Logf(LevelWarn, format, args...) }

// Infof logs at INFO.
func (m *ModuleLogger) Infof(format string, args ...any) { m.Logf(LevelInfo, format, args...) }

// Debugf logs at DBG.
func (m *ModuleLogger) Debugf(format string, args ...any) { m.Logf(LevelDbg, format, args...) }

// emit writes msg to every destination enabled at lvl. Holding l.mu keeps
// sequence numbers in output order.
func (m *ModuleLogger) emit(lvl Level, msg string) {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	r := record{t: l.now(), seq: l.seq, module: m.name, subprogram: l.subprogram,
		level: lvl, msg: msg, program: l.program, facility: l.facility, start: l.start}
	if m.Level(DestConsole) >= lvl {
		l.console.Log(toLogrus[lvl], formatPattern(l.patterns[DestConsole], &r))
	}
	if m.Level(DestSyslog) >= lvl {
		line := formatPattern(l.patterns[DestSyslog], &r)
		sl := l.syslogLocked()
		for _, part := range strings.Split(line, "\n") {
			if part != "" {
				sl.log(syslogLevels[lvl]|l.facility, part, r.t)
			}
		}
		if l.syslogTarget != nil {
			sendTruncating(l.syslogTarget, formatPattern(syslogTargetPattern, &r))
		}
	}
	if l.logFile != nil && m.Level(DestFile) >= lvl {
		l.file.Log(toLogrus[lvl], formatPattern(l.patterns[DestFile], &r))
	}
}

const (
	fieldModule = "module"
	fieldSeq    = "seq"
)

// logrus levels stand in for vlog levels on the way to vlogFormatter.
// Entry.Log never exits or panics, whatever the level.
var toLogrus = [...]logrus.Level{
	LevelOff:  logrus.PanicLevel,
	LevelEmer: logrus.FatalLevel,
	LevelErr:  logrus.ErrorLevel,
	LevelWarn: logrus.WarnLevel,
	LevelInfo: logrus.InfoLevel,
	LevelDbg:  logrus.DebugLevel,
}

func fromLogrus(l logrus.Level) Level {
	for v, lr := range toLogrus {
		if lr == l && v != int(LevelOff) {
			return Level(v)
		}
	}
	return LevelDbg
}

// vlogFormatter writes the line emit rendered from the destination's
// pattern, as OVS writes it.
type vlogFormatter struct{}

func (vlogFormatter) Format(e *logrus.Entry) ([]byte, error) {
	return []byte(e.Message + "\n"), nil
}
