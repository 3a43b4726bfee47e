package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A syslogger delivers the syslog destination's lines, as OVS's
// syslog-provider classes do. log is called with the Logger's mutex held.
type syslogger interface {
	log(pri int, line string, now time.Time)
	prefix() string // as "vlog/list-pattern" shows it
	close()
}

// newSyslogger returns the syslogger for an OVS --syslog-method value:
// "libc" (the local syslog socket, /dev/log, as syslog(3) writes it),
// "null", "unix:FILE" or "udp:HOST[:PORT]" (port 514 by default).
func newSyslogger(method, program string) (syslogger, error) {
	switch {
	case method == "null":
		return nullSyslog{}, nil
	case method == "libc":
		return &libcSyslog{path: "/dev/log", ident: program}, nil
	case strings.HasPrefix(method, "udp:"):
		target := method[4:]
		if _, _, err := net.SplitHostPort(target); err != nil {
			target = net.JoinHostPort(strings.Trim(target, "[]"), "514")
		}
		c, err := net.Dial("udp", target)
		if err != nil {
			// OVS keeps the method and sends nothing.
			return &directSyslog{}, nil
		}
		return &directSyslog{conn: c}, nil
	case strings.HasPrefix(method, "unix:"):
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: method[5:], Net: "unixgram"})
		if err != nil {
			return &directSyslog{}, nil
		}
		return &directSyslog{conn: c}, nil
	}
	return nil, fmt.Errorf("unsupported syslog method '%s'", method)
}

type nullSyslog struct{}

func (nullSyslog) log(int, string, time.Time) {}
func (nullSyslog) prefix() string             { return "" }
func (nullSyslog) close()                     {}

// directSyslog is OVS's syslog-direct: "<PRI>line" datagrams to a UDP or
// unix socket, with LOG_DAEMON when the priority names no facility.
type directSyslog struct{ conn net.Conn }

func (s *directSyslog) log(pri int, line string, _ time.Time) {
	if s.conn == nil {
		return
	}
	if pri&0x3f8 == 0 {
		pri |= facilityDaemon
	}
	sendTruncating(s.conn, fmt.Sprintf("<%d>%s", pri, line))
}
func (*directSyslog) prefix() string { return "<%B>" }
func (s *directSyslog) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// libcSyslog writes to the local syslog socket as glibc's syslog(3) does
// after OVS's openlog(program, LOG_NDELAY, LOG_DAEMON):
// "<PRI>Mmm dd hh:mm:ss PROGRAM: line". Without a syslog daemon the socket
// is missing and the line is dropped, as with syslog(3); the connection is
// retried at most once a second.
type libcSyslog struct {
	path, ident string
	conn        net.Conn
	lastTry     time.Time
	mu          sync.Mutex
}

func (s *libcSyslog) log(pri int, line string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		if now.Sub(s.lastTry) < time.Second {
			return
		}
		s.lastTry = now
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s.path, Net: "unixgram"})
		if err != nil {
			return
		}
		s.conn = c
	}
	if pri&0x3f8 == 0 {
		pri |= facilityDaemon
	}
	msg := fmt.Sprintf("<%d>%s %s: %s", pri, now.Local().Format("Jan _2 15:04:05"), s.ident, line)
	if err := sendTruncating(s.conn, msg); err != nil {
		s.conn.Close()
		s.conn = nil
	}
}
func (*libcSyslog) prefix() string { return "<%B> %D{%h %e %T} %E %A:" }
func (s *libcSyslog) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// sendTruncating sends msg as one datagram, shortening it by 5% at a time
// while the socket says it is too long, as OVS does.
func sendTruncating(c net.Conn, msg string) error {
	b := []byte(msg)
	for {
		_, err := c.Write(b)
		if err == nil || !errors.Is(err, syscall.EMSGSIZE) || len(b) < 20 {
			return err
		}
		b = b[:len(b)-len(b)/20]
	}
}

// syslogTargetPattern is what --syslog-target sends, RFC 5424 style.
const syslogTargetPattern = "<%B>1 %D{%Y-%m-%dT%H:%M:%S.###Z} %E %A %P %c - \xef\xbb\xbf%m"

// setPattern applies "PATTERN:destination[:pattern]" (rest is what follows
// "PATTERN:"; hasDest is false for a bare "PATTERN"), with OVS's errors.
func (l *Logger) setPattern(rest string, hasDest bool) error {
	dest, pattern, _ := strings.Cut(rest, ":")
	if !hasDest || dest == "" {
		return errors.New("missing destination")
	}
	d, ok := parseDestination(dest)
	if !ok && !strings.EqualFold(dest, "any") {
		return fmt.Errorf("unknown destination \"%s\"", dest)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range numDests {
		if !ok || d == i {
			l.patterns[i] = pattern
		}
	}
	return nil
}

// setFacility applies "FACILITY:name", with OVS's error.
func (l *Logger) setFacility(name string) error {
	f, ok := syslogFacilities[strings.ToLower(name)]
	if !ok {
		return errors.New("invalid facility")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.facility = f
	return nil
}

// CheckSyslogMethod returns OVS's error for a --syslog-method it does not
// know.
func CheckSyslogMethod(method string) error {
	switch {
	case method == "null", method == "libc", strings.HasPrefix(method, "udp:"),
		strings.HasPrefix(method, "unix:"):
		return nil
	}
	return fmt.Errorf("unsupported syslog method '%s'", method)
}

// SetSyslogMethod chooses how syslog messages are sent (see newSyslogger).
// As in OVS, only the first method set counts.
func (l *Logger) SetSyslogMethod(method string) error {
	if err := CheckSyslogMethod(method); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.syslog == nil && l.syslogMethod == "" {
		l.syslogMethod = method
	}
	return nil
}

// SetSyslogTarget also sends every syslog message to HOST:PORT over UDP,
// in RFC 5424 form, as OVS's deprecated --syslog-target does.
func (l *Logger) SetSyslogTarget(target string) error {
	c, err := net.Dial("udp", target)
	if err != nil {
		return fmt.Errorf("%s: %v", target, err)
	}
	l.mu.Lock()
	old := l.syslogTarget
	l.syslogTarget = c
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	l.self.Warnf("--syslog-target flag is deprecated, use --syslog-method instead")
	return nil
}

// SetProgram sets the program name that patterns (%A) and syslog show.
func (l *Logger) SetProgram(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.program = name
}

// syslogLocked returns the syslogger, creating it on first use from the
// method set, $OVS_SYSLOG_METHOD, or "libc". The caller holds l.mu.
func (l *Logger) syslogLocked() syslogger {
	if l.syslog != nil {
		return l.syslog
	}
	method := l.syslogMethod
	if method == "" {
		method = os.Getenv("OVS_SYSLOG_METHOD")
	}
	if method == "" {
		method = "libc"
	}
	s, err := newSyslogger(method, l.program)
	if err != nil {
		s = nullSyslog{}
	}
	l.syslog = s
	return s
}
