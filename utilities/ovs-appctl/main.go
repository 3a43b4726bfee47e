// Command ovs-appctl sends one command to a running Open vSwitch (or govs)
// daemon's control socket and prints the reply, as Open vSwitch's
// ovs-appctl does, with its output, error texts and exit statuses:
//
//	ovs-appctl [-t TARGET] [-T SECS] COMMAND [ARG...]
//
// TARGET is a program name (its pid is read from <rundir>/TARGET.pid,
// which the daemon must hold locked) or an absolute socket path; the
// default is ovs-vswitchd. Exit status 0 on success, 2 when the daemon
// answers with an error, 1 for every other failure; with --timeout the
// process dies of SIGALRM when the time is up, as OVS's does.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/govs/govs/internal/daemon"
)

const (
	program = "ovs-appctl"
	version = "3.1.0"
)

const usage = `ovs-appctl, for querying and controlling Open vSwitch daemon
usage: ovs-appctl [TARGET] COMMAND [ARG...]
Targets:
  -t, --target=TARGET  pidfile or socket to contact
Common commands:
  list-commands      List commands supported by the target
  version            Print version of the target
  vlog/list          List current logging levels
  vlog/list-pattern  List logging patterns for each destination.
  vlog/set [SPEC]
      Set log levels as detailed in SPEC, which may include:
      A valid module name (all modules, by default)
      'syslog', 'console', 'file' (all destinations, by default))
      'off', 'emer', 'err', 'warn', 'info', or 'dbg' ('dbg', bydefault)
  vlog/reopen        Make the program reopen its log file
Other options:
  --timeout=SECS     wait at most SECS seconds for a response
  -h, --help         Print this helpful information
  -V, --version      Display ovs-appctl version information
`

// appctl is one run: its logger and target.
type appctl struct {
	log    *daemon.Logger
	target string
}

func main() {
	log := daemon.NewLogger(os.Stderr)
	daemon.RegisterOVSModules(log, "ovsdb-server") // the library's modules
	log.Set("console:warn")                        // as OVS's ovs-appctl
	a := &appctl{log: log, target: "ovs-vswitchd"}
	os.Exit(a.run(os.Args[1:]))
}

func fatalf(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s\n", program, fmt.Sprintf(format, args...))
	return 1
}

func (a *appctl) run(args []string) int {
	var timeout uint64
	var help, showVersion, listOptions bool
	set := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	flags := []daemon.Flag{
		{Long: "target", Short: 't', Arg: daemon.RequiredArg, Set: func(v string) error { a.target = v; return nil }},
		// Older versions took the command as -e's argument; OVS ignores -e.
		{Long: "execute", Short: 'e', Set: func(string) error { return nil }},
		{Long: "help", Short: 'h', Set: set(&help)},
		{Long: "option", Short: 'o', Set: set(&listOptions)},
		{Long: "version", Short: 'V', Set: set(&showVersion)},
		{Long: "timeout", Short: 'T', Arg: daemon.RequiredArg, Set: func(v string) error {
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil || n == 0 {
				os.Exit(fatalf("value %s on -T or --timeout is invalid", v))
			}
			timeout = n
			return nil
		}},
		{Long: "verbose", Short: 'v', Arg: daemon.OptionalArg, Set: func(v string) error {
			if err := a.log.Set(v); err != nil {
				os.Exit(fatalf("processing \"%s\": %v", v, err))
			}
			return nil
		}},
		{Long: "log-file", Arg: daemon.OptionalArg, Set: func(v string) error {
			if v == "" {
				v = filepath.Join(daemon.Logdir(), program+".log")
			}
			if err := a.log.SetLogFile(v); err != nil {
				a.log.Module("vlog").Warnf("%v", err)
			}
			return nil
		}},
		{Long: "syslog-method", Arg: daemon.RequiredArg, Set: func(string) error { return nil }},
		{Long: "syslog-target", Arg: daemon.RequiredArg, Set: func(string) error { return nil }},
	}
	cmd, err := daemon.Getopt(args, flags, true)
	switch {
	case err != nil:
		// getopt's own messages start with argv[0], not the program name.
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[0], err)
		return 1
	case help:
		fmt.Print(usage)
		return 0
	case listOptions:
		printOptions(flags)
		return 0
	case showVersion:
		fmt.Print(daemon.VersionText(program, version))
		return 0
	case len(cmd) == 0:
		return fatalf("at least one non-option argument is required (use --help for help)")
	}
	if timeout > 0 {
		a.alarm(time.Duration(timeout) * time.Second)
	}

	path, code := a.socketPath()
	if code != 0 {
		return code
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		a.log.Module("unixctl").Warnf("failed to connect to %s", path)
		return fatalf("cannot connect to \"%s\" (%s)", path, daemon.Strerror(syscallErr(err)))
	}
	defer conn.Close()
	result, cmdErr, err := a.transact(conn, "unix:"+path, cmd[0], cmd[1:])
	if err != nil {
		return fatalf("%s: transaction error (%s)", a.target, daemon.Strerror(err))
	}
	if cmdErr != nil {
		os.Stderr.WriteString(*cmdErr)
		fmt.Fprintf(os.Stderr, "%s: %s: server returned an error\n", program, a.target)
		return 2
	}
	if result != nil {
		os.Stdout.WriteString(*result)
	}
	return 0
}

// socketPath finds the target's control socket: an absolute target is the
// socket itself; a name is looked up through its pidfile in the rundir.
func (a *appctl) socketPath() (string, int) {
	if strings.HasPrefix(a.target, "/") {
		return a.target, 0
	}
	rundir := daemon.Rundir()
	pidfile := fmt.Sprintf("%s/%s.pid", rundir, a.target)
	pid, err := daemon.ReadPidfile(pidfile)
	if err != nil {
		errno := syscall.ESRCH
		var en syscall.Errno
		if errors.As(err, &en) {
			errno = en
			if en != syscall.ESRCH {
				a.log.Module("daemon_unix").Warnf("%s: open: %s", pidfile, daemon.Strerror(en))
			}
		}
		return "", fatalf("cannot read pidfile \"%s\" (%s)", pidfile, daemon.Strerror(errno))
	}
	return fmt.Sprintf("%s/%s.%d.ctl", rundir, a.target, pid), 0
}

// transact sends one request and reads replies until the one with its id,
// as OVS's unixctl_client_transact does. Exactly one of result and cmdErr
// is set on success.
func (a *appctl) transact(conn io.ReadWriter, name, method string, params []string) (result, cmdErr *string, err error) {
	jlog := a.log.Module("jsonrpc")
	ulog := a.log.Module("unixctl")
	if params == nil {
		params = []string{}
	}
	req, _ := json.Marshal(struct {
		Method string   `json:"method"`
		Params []string `json:"params"`
		ID     int      `json:"id"`
	}{method, params, 0})
	if jlog.Enabled(daemon.LevelDbg) {
		jlog.Debugf("%s: send request, method=%s, params=%s, id=0", name, jsonText(method), jsonText(params))
	}
	if _, err := conn.Write(req); err != nil {
		ulog.Warnf("error communicating with %s: %s", name, daemon.Strerror(syscallErr(err)))
		return nil, nil, syscallErr(err)
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var msg map[string]json.RawMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				ulog.Warnf("error communicating with %s: End of file", name)
				return nil, nil, errEOF
			}
			var se *json.SyntaxError
			var ue *json.UnmarshalTypeError
			if errors.As(err, &se) || errors.As(err, &ue) {
				ulog.Warnf("error communicating with %s: Protocol error", name)
				return nil, nil, syscall.EPROTO
			}
			ulog.Warnf("error communicating with %s: %s", name, daemon.Strerror(syscallErr(err)))
			return nil, nil, syscallErr(err)
		}
		if id, ok := msg["id"]; !ok || string(bytes.TrimSpace(id)) != "0" {
			continue // not our reply
		}
		if _, ok := msg["method"]; ok {
			continue // a request, not a reply
		}
		errJSON, resJSON := msg["error"], msg["result"]
		if jlog.Enabled(daemon.LevelDbg) {
			if !isNull(errJSON) {
				jlog.Debugf("%s: received error, error=%s, id=0", name, compactJSON(errJSON))
			} else {
				jlog.Debugf("%s: received reply, result=%s, id=0", name, compactJSON(resJSON))
			}
		}
		if !isNull(errJSON) {
			var s string
			if json.Unmarshal(errJSON, &s) != nil {
				ulog.Warnf("%s: unexpected error type in JSON RPC reply: %s", name, jsonType(errJSON))
				return nil, nil, syscall.EINVAL
			}
			return nil, &s, nil
		}
		if !isNull(resJSON) {
			var s string
			if json.Unmarshal(resJSON, &s) != nil {
				ulog.Warnf("%s: unexpected result type in JSON rpc reply: %s", name, jsonType(resJSON))
				return nil, nil, syscall.EINVAL
			}
			return &s, nil, nil
		}
		empty := ""
		return &empty, nil, nil
	}
}

// alarm ends the process after d as OVS's time_alarm does: a fatal_signal
// warning, then death by SIGALRM.
func (a *appctl) alarm(d time.Duration) {
	time.AfterFunc(d, func() {
		a.log.Module("fatal_signal").Warnf("terminating with signal %d (Alarm clock)", int(syscall.SIGALRM))
		// Go's runtime ignores SIGALRM nobody asked for, even after
		// signal.Reset: put the kernel's default action (terminate) back.
		var sa [4]uint64 // struct kernel_sigaction, all zero: SIG_DFL
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGALRM),
			uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
		syscall.Kill(os.Getpid(), syscall.SIGALRM)
		time.Sleep(time.Second)
		os.Exit(1) // not reached
	})
}

var errEOF = errors.New("End of file")

// syscallErr returns the errno inside a net or os error, or err itself.
func syscallErr(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return err
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// jsonType names raw's JSON type as OVS's json_type_to_string does.
func jsonType(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return "null"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == '"':
		return "string"
	case t[0] == 't':
		return "true"
	case t[0] == 'f':
		return "false"
	case t[0] == 'n':
		return "null"
	}
	return "number"
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// printOptions lists the options as OVS's ovs_cmdl_print_options does (for
// bash completion).
func printOptions(flags []daemon.Flag) {
	arg := map[daemon.ArgMode][2]string{daemon.NoArg: {"", " "}, daemon.RequiredArg: {"=ARG", " ARG"},
		daemon.OptionalArg: {"=[ARG]", " [ARG]"}}
	for _, f := range flags {
		fmt.Printf("--%s%s\n", f.Long, arg[f.Arg][0])
		if f.Short != 0 {
			fmt.Printf("-%c%s\n", f.Short, arg[f.Arg][1])
		}
	}
}
