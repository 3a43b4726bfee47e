package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// OVS's default log patterns (lib/vlog.h VLOG_DESTINATIONS), by destination.
var defaultPatterns = [numDests]string{
	DestConsole: "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m",
	DestSyslog:  "ovs|%05N|%c%T|%p|%m",
	DestFile:    "%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m",
}

// syslogLevels maps vlog levels to syslog severities, as OVS's VLOG_LEVELS.
var syslogLevels = [...]int{
	LevelOff:  1, // LOG_ALERT
	LevelEmer: 1, // LOG_ALERT
	LevelErr:  3, // LOG_ERR
	LevelWarn: 4, // LOG_WARNING
	LevelInfo: 5, // LOG_NOTICE
	LevelDbg:  7, // LOG_DEBUG
}

// Syslog facilities by the names vlog/set FACILITY:name takes (OVS's
// vlog_facilities).
var syslogFacilities = map[string]int{
	"kern": 0 << 3, "user": 1 << 3, "mail": 2 << 3, "daemon": 3 << 3,
	"auth": 4 << 3, "syslog": 5 << 3, "lpr": 6 << 3, "news": 7 << 3,
	"uucp": 8 << 3, "clock": 9 << 3, "ftp": 11 << 3, "ntp": 12 << 3,
	"audit": 13 << 3, "alert": 14 << 3, "clock2": 15 << 3,
	"local0": 16 << 3, "local1": 17 << 3, "local2": 18 << 3, "local3": 19 << 3,
	"local4": 20 << 3, "local5": 21 << 3, "local6": 22 << 3, "local7": 23 << 3,
}

const (
	facilityDaemon = 3 << 3
	facilityLocal0 = 16 << 3
)

// record is one log message on its way to the destinations' patterns.
type record struct {
	t          time.Time
	seq        uint64
	module     string
	subprogram string
	level      Level
	msg        string
	program    string
	facility   int // 0 when not set with FACILITY:
	start      time.Time
}

// formatPattern renders pattern for r as OVS's format_log_message does:
// %A program, %B syslog priority, %c module, %d{FMT}/%D{FMT} local/UTC time
// (strftime, "###" for milliseconds), %E host name, %m message, %N message
// number, %n newline, %p level, %P pid, %r milliseconds since start, %t
// subprogram or "main", %T "(subprogram)" or nothing; each may carry a
// field width, "-" to left-justify and "0" to pad with zeros. Any other
// character after % stands for itself.
// maxPatternWidth is the widest field a pattern may ask for.
const maxPatternWidth = 1 << 16

func formatPattern(pattern string, r *record) string {
	var b strings.Builder
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c != '%' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		left, pad := false, byte(' ')
		if i < len(pattern) && pattern[i] == '-' {
			left = true
			i++
		}
		if i < len(pattern) && pattern[i] == '0' {
			pad = '0'
			i++
		}
		width := 0
		for i < len(pattern) && pattern[i] >= '0' && pattern[i] <= '9' {
			// Capped: a width of twenty digits overflowed, and a huge
			// one panicked the daemon padding a line (found by
			// FuzzFormatPattern; OVS's unsigned width wraps).
			width = min(width*10+int(pattern[i]-'0'), maxPatternWidth)
			i++
		}
		if i >= len(pattern) {
			break
		}
		conv := pattern[i]
		i++
		braces := func(def string) string {
			if i < len(pattern) && pattern[i] == '{' {
				n := strings.IndexByte(pattern[i+1:], '}')
				if n < 0 {
					s := pattern[i+1:]
					i = len(pattern)
					return s
				}
				s := pattern[i+1 : i+1+n]
				i += n + 2
				return s
			}
			return def
		}
		var s string
		switch conv {
		case 'A':
			s = r.program
		case 'B':
			f := r.facility
			if f == 0 {
				f = facilityLocal0
			}
			s = strconv.Itoa(f + syslogLevels[r.level])
		case 'c':
			braces("")
			s = r.module
		case 'd':
			s = strftimeMsec(braces("%Y-%m-%d %H:%M:%S.###"), r.t.Local())
		case 'D':
			s = strftimeMsec(braces("%Y-%m-%d %H:%M:%S.###"), r.t.UTC())
		case 'E':
			s, _ = os.Hostname()
		case 'm':
			s = strings.TrimRight(r.msg, "\n")
		case 'N':
			s = strconv.FormatUint(r.seq, 10)
		case 'n':
			s = "\n"
		case 'p':
			s = r.level.String()
		case 'P':
			s = strconv.Itoa(os.Getpid())
		case 'r':
			s = strconv.FormatInt(r.t.Sub(r.start).Milliseconds(), 10)
		case 't':
			s = r.subprogram
			if s == "" {
				s = "main"
			}
		case 'T':
			if r.subprogram != "" {
				s = "(" + r.subprogram + ")"
			}
		default:
			s = string(conv)
		}
		if n := width - len(s); n > 0 {
			if left {
				// OVS pads a left-justified field with the pad character too.
				s += strings.Repeat(string(pad), n)
			} else {
				s = strings.Repeat(string(pad), n) + s
			}
		}
		b.WriteString(s)
	}
	return b.String()
}

// strftimeMsec formats t with a C strftime format, where "###" stands for
// the milliseconds (OVS's ds_put_strftime_msec). Conversions strftime has
// and this does not are written as they are.
func strftimeMsec(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '#' && strings.HasPrefix(format[i:], "###") {
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
			i += 2
			continue
		}
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
