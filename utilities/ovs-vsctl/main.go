// Command ovs-vsctl is govs' ovs-vsctl: it configures ovs-vswitchd through
// its database with the commands, options, output and exit statuses of
// Open vSwitch 3.1's ovs-vsctl(8).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/dbtext"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

const (
	ovsVersion    = "3.1.0"
	schemaVersion = "8.3.1"
)

// options are the global options.
type options struct {
	db      string
	oneline bool
	dryRun  bool
	wait    bool
	timeout int
	retry   bool
	style   dbtext.Style
	// Logging, applied once the options are parsed: -v specs in order,
	// --log-file (nil without it, "" for the default file), --syslog-*.
	logSpecs                   []string
	logFile                    *string
	syslogMethod, syslogTarget string
}

var (
	program = "ovs-vsctl"
	// vlog is the log, as OVS's vlog: console at WARN, syslog and file
	// at INFO. Nil until the options are parsed.
	vlog *daemon.Logger
)

// logWarn logs a warning (on the console, stderr, unless -v says not).
func logWarn(module, format string, args ...any) {
	if vlog == nil {
		fmt.Fprintf(os.Stderr, "%s|00001|%s|WARN|%s\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"), module, fmt.Sprintf(format, args...))
		return
	}
	vlog.Module(module).Warnf(format, args...)
}

// die is OVS's ctl_fatal: the message goes to syslog and the log file at
// ERR (not to the console, where it is printed plainly), then exit 1.
func die(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ctlErr(msg)
	fmt.Fprintf(os.Stderr, "%s: %s\n", program, msg)
	os.Exit(1)
}

// ctlErr logs a fatal error at ERR everywhere but the console.
func ctlErr(msg string) {
	if vlog != nil {
		vlog.Set("db_ctl_base:console:off")
		vlog.Module("db_ctl_base").Errorf("%s", msg)
	}
}

// vsctlModules are the vlog modules of OVS 3.1's ovs-vsctl beyond those
// its library shares with ovsdb-server, so that -v can name them.
var vsctlModules = []string{"vsctl", "db_ctl_base", "ovsdb_idl", "ovsdb_cs", "ovsdb_types", "table"}

// openLog sets the log up from the options, as OVS's ovs-vsctl does before
// anything else: the console at WARN, module reconnect at WARN everywhere,
// then --syslog-method, -v, --log-file.
func openLog(o *options) {
	l := daemon.NewLogger(os.Stderr)
	l.SetProgram(program)
	daemon.RegisterOVSModules(l, "ovsdb-server")
	for _, m := range vsctlModules {
		l.Module(m)
	}
	l.Set("console:warn")
	l.Set("reconnect:warn")
	if o.syslogMethod != "" {
		if err := l.SetSyslogMethod(o.syslogMethod); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
			os.Exit(1)
		}
	}
	for _, spec := range o.logSpecs {
		if err := l.Set(spec); err != nil {
			fmt.Fprintf(os.Stderr, "%s: processing \"%s\": %v\n", program, spec, err)
			os.Exit(1)
		}
	}
	vlog = l
	if o.syslogTarget != "" {
		if err := l.SetSyslogTarget(o.syslogTarget); err != nil {
			logWarn("vlog", "%v", err)
		}
	}
	if o.logFile != nil {
		path := *o.logFile
		if path == "" {
			path = filepath.Join(daemon.Logdir(), program+".log")
		}
		if err := l.SetLogFile(path); err != nil {
			logWarn("vlog", "%v", err)
		}
	}
}

var allCommands = func() map[string]*syntax {
	m := map[string]*syntax{}
	for _, s := range append(append([]*syntax{}, dbCommands...), vsctlCommands...) {
		m[s.name] = s
	}
	return m
}()

// localOptions lists every command option with whether it takes an argument.
func localOptions() map[string]bool {
	m := map[string]bool{}
	for _, s := range allCommands {
		for _, o := range strings.Split(s.options, ",") {
			if o == "" {
				continue
			}
			name, arg := strings.CutSuffix(o, "=")
			m[strings.TrimPrefix(name, "--")] = arg
		}
	}
	return m
}

// globalLong maps long options to whether they take an argument (1),
// may take one (2) or take none (0).
var globalLong = map[string]int{
	"db": 1, "no-syslog": 0, "no-wait": 0, "dry-run": 0, "oneline": 0, "timeout": 1, "retry": 0,
	"help": 0, "commands": 0, "options": 0, "version": 0, "verbose": 2, "log-file": 2,
	"syslog-method": 1, "syslog-target": 1, "format": 1, "data": 1, "no-headings": 0, "pretty": 0, "bare": 0,
	"private-key": 1, "certificate": 1, "ca-cert": 1, "bootstrap-ca-cert": 1, "peer-ca-cert": 1,
	"ssl-protocols": 1, "ssl-ciphers": 1, "ssl-ciphersuites": 1,
}

var shortOpts = map[byte]string{'t': "timeout", 'h': "help", 'V': "version", 'v': "verbose", 'f': "format", 'd': "data", 'p': "private-key", 'c': "certificate", 'C': "ca-cert"}

type localOpt struct {
	key   string
	value *string
}

// parseOptions is getopt_long with a leading "+": options stop at the
// first non-option. Command options given here apply to the first command.
func parseOptions(argv []string) (*options, []localOpt, []string) {
	o := &options{wait: true}
	local := localOptions()
	var locals []localOpt
	i := 0
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		var name, val string
		hasVal := false
		if strings.HasPrefix(a, "--") {
			name, val, hasVal = strings.Cut(a[2:], "=")
			// Unique prefixes abbreviate, as getopt_long allows.
			if _, ok := globalLong[name]; !ok {
				if _, ok := local[name]; !ok {
					var match []string
					for n := range globalLong {
						if strings.HasPrefix(n, name) {
							match = append(match, n)
						}
					}
					for n := range local {
						if strings.HasPrefix(n, name) {
							match = append(match, n)
						}
					}
					switch len(match) {
					case 1:
						name = match[0]
					case 0:
						fmt.Fprintf(os.Stderr, "%s: unrecognized option '%s'\n", program, a)
						os.Exit(1)
					default:
						sort.Strings(match)
						fmt.Fprintf(os.Stderr, "%s: option '%s' is ambiguous\n", program, a)
						os.Exit(1)
					}
				}
			}
			if takes, ok := local[name]; ok {
				if _, glob := globalLong[name]; !glob {
					if takes && !hasVal {
						if i+1 >= len(argv) {
							fmt.Fprintf(os.Stderr, "%s: option '--%s' requires an argument\n", program, name)
							os.Exit(1)
						}
						i++
						val, hasVal = argv[i], true
					} else if !takes && hasVal {
						fmt.Fprintf(os.Stderr, "%s: option '--%s' doesn't allow an argument\n", program, name)
						os.Exit(1)
					}
					for _, l := range locals {
						if l.key == "--"+name {
							die("'%s' option specified multiple times", name)
						}
					}
					lo := localOpt{key: "--" + name}
					if hasVal {
						v := val
						lo.value = &v
					}
					locals = append(locals, lo)
					continue
				}
			}
			switch globalLong[name] {
			case 1:
				if !hasVal {
					if i+1 >= len(argv) {
						fmt.Fprintf(os.Stderr, "%s: option '--%s' requires an argument\n", program, name)
						os.Exit(1)
					}
					i++
					val = argv[i]
				}
			case 0:
				if hasVal {
					fmt.Fprintf(os.Stderr, "%s: option '--%s' doesn't allow an argument\n", program, name)
					os.Exit(1)
				}
			}
		} else {
			c := a[1]
			long, ok := shortOpts[c]
			if !ok {
				fmt.Fprintf(os.Stderr, "%s: invalid option -- '%c'\n", program, c)
				os.Exit(1)
			}
			name = long
			if globalLong[name] == 1 {
				if len(a) > 2 {
					val = a[2:]
				} else {
					if i+1 >= len(argv) {
						fmt.Fprintf(os.Stderr, "%s: option requires an argument -- '%c'\n", program, c)
						os.Exit(1)
					}
					i++
					val = argv[i]
				}
			} else if len(a) > 2 {
				val = a[2:]
			}
		}
		switch name {
		case "db":
			o.db = val
		case "oneline":
			o.oneline = true
		case "no-wait":
			o.wait = false
		case "dry-run":
			o.dryRun = true
		case "timeout":
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				n = 0
			}
			o.timeout = int(n)
		case "retry":
			o.retry = true
		case "help":
			usage()
		case "commands":
			printCommands()
		case "options":
			printOptions()
		case "version":
			fmt.Printf("%s (Open vSwitch) %s\nDB Schema %s\n", program, ovsVersion, schemaVersion)
			os.Exit(0)
		case "format":
			if err := o.style.ParseFormat(val); err != nil {
				die("%v", err)
			}
		case "data":
			if err := o.style.ParseCellFormat(val); err != nil {
				die("%v", err)
			}
		case "no-headings":
			o.style.NoHeadings = true
		case "pretty":
			o.style.Pretty = true
		case "bare":
			o.style.Format = dbtext.FormatList
			o.style.Cell = dbtext.CellBare
			o.style.NoHeadings = true
		case "verbose":
			o.logSpecs = append(o.logSpecs, val)
		case "log-file":
			v := val
			o.logFile = &v
		case "syslog-method":
			o.syslogMethod = val
		case "syslog-target":
			o.syslogTarget = val
		case "no-syslog":
			// OVS's deprecated spelling of -vsyslog:off.
			o.logSpecs = append(o.logSpecs, "syslog:off")
		case "private-key", "certificate", "ca-cert", "bootstrap-ca-cert", "peer-ca-cert", "ssl-protocols", "ssl-ciphers", "ssl-ciphersuites":
			// Read only by ssl: remotes, which Dial refuses for now.
		}
	}
	if o.db == "" {
		o.db = "unix:" + filepath.Join(daemon.Rundir(), "db.sock")
	}
	return o, locals, argv[i:]
}

func usage() {
	fmt.Printf(`%[1]s: ovs-vswitchd management utility
usage: %[1]s [OPTIONS] COMMAND [ARG...]

Open vSwitch commands:
  init                        initialize database, if not yet initialized
  show                        print overview of database contents
  emer-reset                  reset configuration to clean state

Bridge commands:
  add-br BRIDGE               create a new bridge named BRIDGE
  add-br BRIDGE PARENT VLAN   create new fake BRIDGE in PARENT on VLAN
  del-br BRIDGE               delete BRIDGE and all of its ports
  list-br                     print the names of all the bridges
  br-exists BRIDGE            exit 2 if BRIDGE does not exist
  br-to-vlan BRIDGE           print the VLAN which BRIDGE is on
  br-to-parent BRIDGE         print the parent of BRIDGE
  br-set-external-id BRIDGE KEY VALUE  set KEY on BRIDGE to VALUE
  br-set-external-id BRIDGE KEY  unset KEY on BRIDGE
  br-get-external-id BRIDGE KEY  print value of KEY on BRIDGE
  br-get-external-id BRIDGE  list key-value pairs on BRIDGE

Port commands (a bond is considered to be a single port):
  list-ports BRIDGE           print the names of all the ports on BRIDGE
  add-port BRIDGE PORT        add network device PORT to BRIDGE
  add-bond BRIDGE PORT IFACE...  add bonded port PORT in BRIDGE from IFACES
  del-port [BRIDGE] PORT      delete PORT (which may be bonded) from BRIDGE
  port-to-br PORT             print name of bridge that contains PORT

Interface commands (a bond consists of multiple interfaces):
  list-ifaces BRIDGE          print the names of all interfaces on BRIDGE
  iface-to-br IFACE           print name of bridge that contains IFACE

Controller commands:
  get-controller BRIDGE      print the controllers for BRIDGE
  del-controller BRIDGE      delete the controllers for BRIDGE
  set-controller BRIDGE TARGET...  set the controllers for BRIDGE
  get-fail-mode BRIDGE       print the fail-mode for BRIDGE
  del-fail-mode BRIDGE       delete the fail-mode for BRIDGE
  set-fail-mode BRIDGE MODE  set the fail-mode for BRIDGE to MODE

Manager commands:
  get-manager                print the managers
  del-manager                delete the managers
  set-manager TARGET...      set the list of managers to TARGET...

SSL commands:
  get-ssl                     print the SSL configuration
  del-ssl                     delete the SSL configuration
  set-ssl PRIV-KEY CERT CA-CERT  set the SSL configuration

Auto Attach commands:
  add-aa-mapping BRIDGE I-SID VLAN   add Auto Attach mapping to BRIDGE
  del-aa-mapping BRIDGE I-SID VLAN   delete Auto Attach mapping VLAN from BRIDGE
  get-aa-mapping BRIDGE              get Auto Attach mappings from BRIDGE

Switch commands:
  emer-reset                  reset switch to known good state

Database commands:
  list TBL [REC]              list RECord (or all records) in TBL
  find TBL CONDITION...       list records satisfying CONDITION in TBL
  get TBL REC COL[:KEY]       print values of COLumns in RECord in TBL
  set TBL REC COL[:KEY]=VALUE set COLumn values in RECord in TBL
  add TBL REC COL [KEY=]VALUE add (KEY=)VALUE to COLumn in RECord in TBL
  remove TBL REC COL [KEY=]VALUE  remove (KEY=)VALUE from COLumn
  clear TBL REC COL           clear values from COLumn in RECord in TBL
  create TBL COL[:KEY]=VALUE  create and initialize new record
  destroy TBL REC             delete RECord from TBL
  wait-until TBL REC [COL[:KEY]=VALUE]  wait until condition is true
Potentially unsafe database commands require --force option.

Options:
  --db=DATABASE               connect to DATABASE
                              (default: unix:%[2]s/db.sock)
  --no-wait                   do not wait for ovs-vswitchd to reconfigure
  --retry                     keep trying to connect to server forever
  -t, --timeout=SECS          wait at most SECS seconds for ovs-vswitchd
  --dry-run                   do not commit changes to database
  --oneline                   print exactly one line of output per command

Other options:
  -h, --help                  display this help message
  -V, --version               display version information
`, program, daemon.Rundir())
	os.Exit(0)
}

func printCommands() {
	names := slices.Sorted(maps.Keys(allCommands))
	for _, n := range names {
		s := allCommands[n]
		for _, o := range strings.Split(s.options, ",") {
			if o != "" {
				fmt.Printf("[%s] ", o)
			}
		}
		fmt.Printf(",%s,\n", n)
	}
	os.Exit(0)
}

func printOptions() {
	for _, n := range slices.Sorted(maps.Keys(globalLong)) {
		if globalLong[n] == 1 {
			fmt.Printf("--%s=ARG\n", n)
		} else {
			fmt.Printf("--%s\n", n)
		}
	}
	os.Exit(0)
}

// parseCommands splits the arguments at "--" into commands
// (ctl_parse_commands).
func parseCommands(argv []string, locals []localOpt) []*command {
	var cmds []*command
	start := 0
	for i := 0; i <= len(argv); i++ {
		if i < len(argv) && argv[i] != "--" {
			continue
		}
		if i > start {
			cmds = append(cmds, parseCommand(argv[start:i], locals))
			locals = nil
		} else if len(locals) > 0 {
			die("missing command name (use --help for help)")
		}
		start = i + 1
	}
	if len(cmds) == 0 {
		die("missing command name (use --help for help)")
	}
	return cmds
}

func parseCommand(argv []string, locals []localOpt) *command {
	c := &command{options: map[string]*string{}}
	for _, l := range locals {
		c.options[l.key] = l.value
		c.optKeys = append(c.optKeys, l.key)
	}
	i := 0
	for ; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		key, val, hasVal := strings.Cut(argv[i], "=")
		if _, dup := c.options[key]; dup {
			die("'%s' option specified multiple times", argv[i])
		}
		if hasVal {
			v := val
			c.options[key] = &v
		} else {
			c.options[key] = nil
		}
		c.optKeys = append(c.optKeys, key)
	}
	if i == len(argv) {
		die("missing command name (use --help for help)")
	}
	name := argv[i]
	syn := allCommands[name]
	if syn == nil {
		die("unknown command '%s'; use --help for help", name)
	}
	for _, key := range slices.Sorted(maps.Keys(c.options)) {
		end := -1
		if j := strings.Index(syn.options, key); j >= 0 {
			if k := j + len(key); k < len(syn.options) {
				end = int(syn.options[k])
			} else {
				end = 0
			}
		}
		if end != '=' && end != ',' && end != ' ' && end != 0 {
			die("'%s' command has no '%s' option", name, key)
		}
		if (end == '=') != (c.options[key] != nil) {
			if end == '=' {
				die("missing argument to '%s' option on '%s' command", key, name)
			}
			die("'%s' option on '%s' does not accept an argument", key, name)
		}
	}
	n := len(argv) - i - 1
	if n < syn.min {
		die("'%s' command requires at least %d arguments", name, syn.min)
	} else if n > syn.max {
		for _, a := range argv[i+1:] {
			if strings.HasPrefix(a, "-") {
				die("'%s' command takes at most %d arguments (note that options must precede command names and follow a \"--\" argument)", name, syn.max)
			}
		}
		die("'%s' command takes at most %d arguments", name, syn.max)
	}
	c.syn = syn
	c.args = argv[i:]
	return c
}

func main() {
	program = filepath.Base(os.Args[0])
	signal.Ignore(syscall.SIGPIPE)
	o, locals, rest := parseOptions(os.Args[1:])
	openLog(o)
	cmds := parseCommands(rest, locals)
	// OVS logs its arguments, at INFO for commands that may write.
	called := vlog.Module("vsctl").Debugf
	for _, c := range cmds {
		if c.syn.rw {
			called = vlog.Module("vsctl").Infof
			break
		}
	}
	called("Called as %s", calledAs(os.Args))
	if o.timeout > 0 {
		time.AfterFunc(time.Duration(o.timeout)*time.Second, func() {
			logWarn("fatal_signal", "terminating with signal 14 (Alarm clock)")
			dieBySignal(syscall.SIGALRM)
		})
	}
	os.Exit(run(o, cmds, commandLine(os.Args)))
}

// commandLine is the transaction comment's text: the arguments, quoted
// as process_escape_args quotes them.
func commandLine(argv []string) string {
	words := make([]string, len(argv)-1)
	for i, a := range argv[1:] {
		words[i] = escapeArg(a)
	}
	return strings.Join(words, " ")
}

// calledAs is the whole command line, program included, quoted as
// process_escape_args quotes it.
func calledAs(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = escapeArg(a)
	}
	return strings.Join(words, " ")
}

func connect(o *options) *ovsdbc.Replica {
	rc := vlog.Module("reconnect")
	for {
		rc.Infof("%s: connecting...", o.db)
		conn, err := ovsdbc.Dial(o.db)
		if err != nil {
			rc.Infof("%s: connection attempt failed (%s)", o.db, ovsdbc.Errno(err))
		}
		if err == nil {
			rc.Infof("%s: connected", o.db)
			rep, err := ovsdbc.OpenReplica(conn, "Open_vSwitch")
			if err == nil {
				return rep
			}
			conn.Close()
			if !o.retry {
				die("%s: database connection failed (%s)", o.db, ovsdbc.Errno(err))
			}
		} else if !o.retry {
			die("%s: database connection failed (%s)", o.db, ovsdbc.Errno(err))
		}
		time.Sleep(time.Second)
	}
}

// attempt is one execution of the commands against a copy of the database.
type attempt struct {
	t         *txn
	syms      dbtext.Symbols
	newIfaces []*row
}

// execute runs the commands; it returns false if a wait-until condition
// does not hold yet. A fatal error or an early exit panics.
func execute(rep *ovsdbc.Replica, cmds []*command) (*attempt, bool) {
	a := &attempt{t: newTxn(rep), syms: dbtext.Symbols{}}
	var ovs *row
	if rows := a.t.list("Open_vSwitch"); len(rows) > 0 {
		ovs = rows[0]
	} else {
		ovs = a.t.insert("Open_vSwitch", nil)
	}
	var cache *vcache
	for _, cmd := range cmds {
		cmd.out.Reset()
		cmd.table = nil
		c := &ctx{command: cmd, t: a.t, syms: a.syms, ovs: ovs, cache: cache, newIfaces: &a.newIfaces, warn: logWarn}
		cmd.syn.run(c)
		cache = c.cache
		if c.tryAgain {
			return a, false
		}
	}
	return a, true
}

func run(o *options, cmds []*command, args string) (status int) {
	defer func() {
		switch e := recover().(type) {
		case nil:
		case fatal:
			ctlErr(string(e))
			fmt.Fprintf(os.Stderr, "%s: %s\n", program, string(e))
			status = 1
		case exitCode:
			status = int(e)
		default:
			panic(e)
		}
	}()
	rep := connect(o)
	var a *attempt
	var c *commit
	for {
		seq := rep.Seq
		var ok bool
		a, ok = execute(rep, cmds)
		if ok {
			checkSymbols(a.syms)
			if c = a.commit(o, rep, args); c != nil {
				break
			}
			// A verified column changed under us: try again on the
			// contents as they are now, as OVS's ovs-vsctl does.
			if rep.Seq != seq {
				continue
			}
		}
		if err := rep.WaitUpdate(time.Time{}); err != nil {
			die("%s: database connection failed (%s)", o.db, ovsdbc.Errno(err))
		}
	}
	changed, nextCfg, realUUID := c.changed, c.nextCfg, c.realUUID
	for _, cmd := range cmds {
		if cmd.syn.post != nil {
			cmd.syn.post(&ctx{command: cmd, realUUID: realUUID})
		}
	}
	printer := &dbtext.Printer{W: os.Stdout, Style: o.style}
	for _, cmd := range cmds {
		switch {
		case cmd.table != nil:
			printer.Print(cmd.table)
		case o.oneline:
			s := strings.TrimSuffix(cmd.out.String(), "\n")
			s = strings.ReplaceAll(s, "\\", "\\\\")
			s = strings.ReplaceAll(s, "\n", "\\n")
			fmt.Println(s)
		default:
			os.Stdout.WriteString(cmd.out.String())
		}
	}
	if o.wait && changed && !o.dryRun {
		for {
			done := false
			for _, cols := range rep.Rows["Open_vSwitch"] {
				t := rep.Schema.Tables["Open_vSwitch"]
				d := cols[t.ByName["cur_cfg"].Index]
				if d.Len() == 1 && d.Keys[0].(int64) >= nextCfg {
					done = true
				}
			}
			if done {
				break
			}
			if err := rep.WaitUpdate(time.Time{}); err != nil {
				die("%s: database connection failed (%s)", o.db, ovsdbc.Errno(err))
			}
		}
		postReloadChecks(rep, a.newIfaces, realUUID)
	}
	return 0
}

// checkSymbols reports the --id symbols used but never created (fatal) and
// those created without a strong reference (a warning).
func checkSymbols(syms dbtext.Symbols) {
	for _, name := range slices.Sorted(maps.Keys(syms)) {
		sym := syms[name]
		if !sym.Created {
			fatalf("row id \"%s\" is referenced but never created (e.g. with \"-- --id=%s create ...\")", name, name)
		}
		if !sym.StrongRef {
			if !sym.WeakRef {
				logWarn("vsctl", "row id \"%s\" was created but no reference to it was inserted, so it will not actually appear in the database", name)
			} else {
				logWarn("vsctl", "row id \"%s\" was created but only a weak reference to it was inserted, so it will not actually appear in the database", name)
			}
		}
	}
}

// commit is what committing an attempt's changes gave.
type commit struct {
	changed  bool
	nextCfg  int64
	realUUID map[db.UUID]db.UUID
}

// commit sends the attempt's changes, if any. It returns nil if a verified
// column changed since it was read: the commands must run again.
func (a *attempt) commit(o *options, rep *ovsdbc.Replica, args string) *commit {
	ops, nWaits, changed := a.t.ops()
	var nextCfg int64
	realUUID := map[db.UUID]db.UUID{}
	if changed {
		ovs := a.t.list("Open_vSwitch")[0]
		selectIdx := -1
		if o.wait {
			where := whereUUID(ovs.uuid)
			if ovs.inserted {
				where = `[["_uuid","==",["named-uuid",` + quote(namedUUID(ovs.uuid)) + `]]]`
			}
			ops = append(ops, json.RawMessage(`{"op":"mutate","table":"Open_vSwitch","where":`+where+`,"mutations":[["next_cfg","+=",1]]}`))
			selectIdx = len(ops)
			ops = append(ops, json.RawMessage(`{"op":"select","table":"Open_vSwitch","where":`+where+`,"columns":["next_cfg"]}`))
		}
		ops = append(ops, json.RawMessage(`{"op":"comment","comment":`+quote("ovs-vsctl: "+args)+`}`))
		if o.dryRun {
			ops = append(ops, json.RawMessage(`{"op":"abort"}`))
		}
		res, err := rep.Transact(ops)
		if err != nil {
			die("%s: database connection failed (%s)", o.db, ovsdbc.Errno(err))
		}
		for i, r := range res {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(r))
			dec.UseNumber()
			if dec.Decode(&m) != nil || m == nil {
				continue
			}
			e, ok := m["error"].(string)
			if !ok || e == "aborted" && o.dryRun {
				continue
			}
			if i < nWaits && e == "timed out" {
				return nil
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.Encode(m)
			msg := strings.TrimSuffix(b.String(), "\n")
			logWarn("ovsdb_idl", "transaction error: %s", msg)
			fatalf("transaction error: %s", msg)
		}
		n := nWaits
		for _, r := range a.t.inserted {
			if r.deleted {
				continue
			}
			var ir struct {
				UUID []string `json:"uuid"`
			}
			if n < len(res) && json.Unmarshal(res[n], &ir) == nil && len(ir.UUID) == 2 {
				if u, err := db.ParseUUID(ir.UUID[1]); err == nil {
					realUUID[r.uuid] = u
				}
			}
			n++
		}
		if selectIdx >= 0 && selectIdx < len(res) && !o.dryRun {
			var sr struct {
				Rows []struct {
					NextCfg int64 `json:"next_cfg"`
				} `json:"rows"`
			}
			if json.Unmarshal(res[selectIdx], &sr) == nil && len(sr.Rows) == 1 {
				nextCfg = sr.Rows[0].NextCfg
			}
		}
	}
	return &commit{changed, nextCfg, realUUID}
}

// postReloadChecks reports the interfaces the commands added that
// ovs-vswitchd failed to set up.
func postReloadChecks(rep *ovsdbc.Replica, ifaces []*row, realUUID map[db.UUID]db.UUID) {
	t := rep.Schema.Tables["Interface"]
	failed := false
	for _, i := range ifaces {
		u, ok := realUUID[i.uuid]
		if !ok {
			continue
		}
		cols := rep.Rows["Interface"][u]
		if cols == nil {
			continue
		}
		e := cols[t.ByName["error"].Index]
		if e.Len() == 1 && e.Keys[0].(string) != "" {
			name := cols[t.ByName["name"].Index].Keys[0].(string)
			fmt.Fprintf(os.Stderr, "%s: Error detected while setting up '%s': %s.  See ovs-vswitchd log for details.\n", program, name, e.Keys[0].(string))
			failed = true
		}
	}
	if failed {
		fmt.Fprintf(os.Stderr, "%s: The default log directory is \"%s\".\n", program, daemon.Logdir())
	}
}

// postCreate replaces the UUID create printed by the one the server chose.
func postCreate(c *ctx) {
	if u, err := db.ParseUUID(c.out.String()); err == nil {
		if real, ok := c.realUUID[u]; ok {
			c.out.Reset()
			c.out.WriteString(real.String())
		}
	}
	c.out.WriteByte('\n')
}
