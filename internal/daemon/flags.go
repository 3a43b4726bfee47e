package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Options holds the common daemon and logging options. ParseFlags resolves
// paths: every non-empty path in it is absolute.
type Options struct {
	Detach           bool
	NoChdir          bool
	Monitor          bool   // --monitor: a monitor process restarts the daemon after a crash
	Pidfile          string // "" without --pidfile
	OverwritePidfile bool
	User             string    // --user=USER[:GROUP]: Start drops to it (see Start)
	KeepCaps         []uintptr // capabilities (CAP_*) the daemon keeps with --user; set by its main

	LogFile string   // "" without --log-file
	Verbose []string // -v/--verbose specs, in order; "" for a bare -v

	SyslogMethod string // --syslog-method: libc, null, unix:FILE, udp:HOST:PORT; "" for the default
	SyslogTarget string // --syslog-target=HOST:PORT, or ""
	Unixctl      string // "" for the default <rundir>/<program>.<pid>.ctl, or "none"

	// SaveFDs are the standard descriptors (1, 2) a detached daemon keeps
	// rather than pointing at /dev/null, as OVS's daemon_save_fd: a
	// detached ovsdb-client monitor still prints to its stdout.
	SaveFDs []int

	Help    bool // -h/--help: the daemon prints its usage and exits 0
	Version bool // -V/--version: the daemon prints VersionString and exits 0

	Rundir string // $OVS_RUNDIR or /var/run/openvswitch
	Logdir string // $OVS_LOGDIR or /var/log/openvswitch
}

// ArgMode says whether an option takes a value.
type ArgMode int

// Argument modes, as in getopt_long.
const (
	NoArg       ArgMode = iota // --name
	RequiredArg                // --name=VALUE or --name VALUE (-xVALUE or -x VALUE)
	OptionalArg                // --name or --name=VALUE (-x or -xVALUE)
)

// Flag is a daemon-specific option for ParseFlags. Set is called for each
// occurrence, in command-line order, with the value ("" when an OptionalArg
// option has none); its error is reported as the parse error.
type Flag struct {
	Long  string // long name without "--", or ""
	Short rune   // short name, or 0
	Arg   ArgMode
	Set   func(value string) error
}

// Rundir returns $OVS_RUNDIR, or /var/run/openvswitch.
func Rundir() string {
	if d := os.Getenv("OVS_RUNDIR"); d != "" {
		return d
	}
	return "/var/run/openvswitch"
}

// Logdir returns $OVS_LOGDIR, or /var/log/openvswitch.
func Logdir() string {
	if d := os.Getenv("OVS_LOGDIR"); d != "" {
		return d
	}
	return "/var/log/openvswitch"
}

// ParseFlags parses args (without the program name) the way OVS daemons'
// getopt_long does: options and positional arguments may be interleaved,
// "--" ends the options, long options may be abbreviated to a unique prefix,
// and short options may be clustered ("-vconsole:off"). It returns the
// options, the positional arguments and, for a bad command line, an error
// with glibc's text (print it as "PROGRAM: ERROR" and exit 1).
//
// program names the default pidfile (<rundir>/<program>.pid) and log file
// (<logdir>/<program>.log). A relative --pidfile or --unixctl is relative to
// the rundir and a relative --log-file to the working directory.
func ParseFlags(program string, args []string, extra ...Flag) (*Options, []string, error) {
	o := &Options{Rundir: Rundir(), Logdir: Logdir()}
	inRundir := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(o.Rundir, p)
	}
	set := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	ignore := func(string) error { return nil }
	syslogFixed := false
	flags := []Flag{
		{Long: "detach", Set: set(&o.Detach)},
		{Long: "no-chdir", Set: set(&o.NoChdir)},
		{Long: "monitor", Set: set(&o.Monitor)},
		{Long: "pidfile", Arg: OptionalArg, Set: func(v string) error {
			if v == "" {
				v = program + ".pid"
			}
			o.Pidfile = inRundir(v)
			return nil
		}},
		{Long: "overwrite-pidfile", Set: set(&o.OverwritePidfile)},
		{Long: "user", Arg: RequiredArg, Set: func(v string) error { o.User = v; return nil }},
		{Long: "no-self-confinement", Set: ignore},
		{Long: "log-file", Arg: OptionalArg, Set: func(v string) error {
			syslogFixed = true
			if v == "" {
				v = filepath.Join(o.Logdir, program+".log")
			}
			abs, err := filepath.Abs(v)
			if err != nil {
				return err
			}
			o.LogFile = abs
			return nil
		}},
		{Long: "verbose", Short: 'v', Arg: OptionalArg, Set: func(v string) error {
			o.Verbose = append(o.Verbose, v)
			return nil
		}},
		{Long: "syslog-method", Arg: RequiredArg, Set: func(v string) error {
			// OVS fixes its syslog method at the first --syslog-method or
			// the first message logged, which an earlier --log-file
			// ("opened log file") is; later methods are not even checked.
			if syslogFixed {
				return nil
			}
			syslogFixed = true
			if err := CheckSyslogMethod(v); err != nil {
				return err
			}
			o.SyslogMethod = v
			return nil
		}},
		{Long: "syslog-target", Arg: RequiredArg, Set: func(v string) error { o.SyslogTarget = v; return nil }},
		{Long: "unixctl", Arg: RequiredArg, Set: func(v string) error {
			if v != "none" {
				v = inRundir(v)
			}
			o.Unixctl = v
			return nil
		}},
		{Long: "help", Short: 'h', Set: set(&o.Help)},
		{Long: "version", Short: 'V', Set: set(&o.Version)},
	}
	flags = append(flags, extra...)

	positional, err := Getopt(args, flags, false)
	if err != nil {
		return nil, nil, err
	}
	return o, positional, nil
}

// Getopt parses args (without the program name) against flags as glibc's
// getopt_long does, calling each flag's Set in command-line order, and
// returns the non-option arguments. "--" ends the options; long options may
// be abbreviated to a unique prefix; short options may be clustered. Unless
// inOrder, options and non-option arguments may be interleaved; with
// inOrder (getopt's "+"), the first non-option argument ends the options,
// as for ovs-appctl and ovs-vsctl. Errors carry glibc's texts.
func Getopt(args []string, flags []Flag, inOrder bool) ([]string, error) {
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return append(positional, args[i+1:]...), nil
		case strings.HasPrefix(arg, "--"):
			name, value, hasValue := strings.Cut(arg[2:], "=")
			f, err := lookupLong(flags, name)
			if err != nil {
				if err == errUnrecognized {
					return nil, fmt.Errorf("unrecognized option '%s'", arg)
				}
				return nil, err
			}
			switch f.Arg {
			case NoArg:
				if hasValue {
					return nil, fmt.Errorf("option '--%s' doesn't allow an argument", f.Long)
				}
			case RequiredArg:
				if !hasValue {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("option '--%s' requires an argument", f.Long)
					}
					i++
					value = args[i]
				}
			}
			if err := f.Set(value); err != nil {
				return nil, err
			}
		case strings.HasPrefix(arg, "-") && arg != "-":
			for j := 1; j < len(arg); {
				c := rune(arg[j])
				j++
				f := lookupShort(flags, c)
				if f == nil {
					return nil, fmt.Errorf("invalid option -- '%c'", c)
				}
				value := ""
				switch f.Arg {
				case OptionalArg:
					value, j = arg[j:], len(arg)
				case RequiredArg:
					if j < len(arg) {
						value, j = arg[j:], len(arg)
					} else if i+1 < len(args) {
						i++
						value = args[i]
					} else {
						return nil, fmt.Errorf("option requires an argument -- '%c'", c)
					}
				}
				if err := f.Set(value); err != nil {
					return nil, err
				}
			}
		default:
			if inOrder {
				return append(positional, args[i:]...), nil
			}
			positional = append(positional, arg)
		}
	}
	return positional, nil
}

var errUnrecognized = fmt.Errorf("unrecognized option")

func lookupLong(flags []Flag, name string) (*Flag, error) {
	var matches []*Flag
	for i := range flags {
		f := &flags[i]
		if f.Long == "" {
			continue
		}
		if f.Long == name {
			return f, nil
		}
		if name != "" && strings.HasPrefix(f.Long, name) {
			matches = append(matches, f)
		}
	}
	switch len(matches) {
	case 0:
		return nil, errUnrecognized
	case 1:
		return matches[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", name)
	for _, f := range matches {
		fmt.Fprintf(&b, " '--%s'", f.Long)
	}
	return nil, fmt.Errorf("%s", b.String())
}

func lookupShort(flags []Flag, c rune) *Flag {
	for i := range flags {
		if flags[i].Short != 0 && flags[i].Short == c {
			return &flags[i]
		}
	}
	return nil
}

// Usage returns the help text for the options ParseFlags handles itself, in
// OVS's layout, for a daemon's --help output.
func Usage(program string) string {
	return fmt.Sprintf(`
Daemon options:
  --detach                run in background as daemon
  --monitor               creates a process to monitor this daemon
  --no-chdir              do not chdir to '/'
  --pidfile[=FILE]        create pidfile (default: %s/%s.pid)
  --overwrite-pidfile     with --pidfile, start even if already running
  --user=username[:group] changes the effective daemon user:group
  --unixctl=SOCKET        override default control socket name

Logging options:
  -vSPEC, --verbose=SPEC   set logging levels
  -v, --verbose            set maximum verbosity level
  --log-file[=FILE]        enable logging to specified FILE
                           (default: %s/%s.log)
`, Rundir(), program, Logdir(), program)
}

// VersionString returns "PROGRAM (Open vSwitch) VERSION", OVS's first line
// of --version and its "version" command, which scripts parse (ovs-ctl takes
// the last word of the line that says "Open vSwitch").
func VersionString(program, version string) string {
	return fmt.Sprintf("%s (Open vSwitch) %s", program, version)
}

// VersionText is a daemon's whole --version output: VersionString, then
// govs' own version (its module version and VCS revision, as built).
func VersionText(program, version string) string {
	return VersionString(program, version) + "\n" + GovsVersion() + "\n"
}

// GovsVersion returns "govs VERSION", the build's module version and, when
// built from a git checkout, its revision ("govs (devel) 0d46653a1b2c").
func GovsVersion() string {
	v := "govs"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " (unknown)"
	}
	v += " " + bi.Main.Version
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v
}
