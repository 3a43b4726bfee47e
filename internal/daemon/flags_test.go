package daemon

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("OVS_RUNDIR", "/run/rd")
	t.Setenv("OVS_LOGDIR", "/log/ld")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Rundir: "/run/rd", Logdir: "/log/ld"}
	with := func(f func(o *Options)) Options { o := base; f(&o); return o }

	tests := []struct {
		name    string
		args    []string
		want    Options
		pos     []string
		remotes []string // --remote values (an extra flag)
		embed   []string // --embedded-db values (an extra optional flag)
		err     string
	}{
		{name: "empty", want: base},
		{name: "positional interleaved",
			args: []string{"a.db", "--detach", "b.db", "--no-chdir"},
			want: with(func(o *Options) { o.Detach, o.NoChdir = true, true }),
			pos:  []string{"a.db", "b.db"}},
		{name: "double dash ends options",
			args: []string{"--detach", "--", "--pidfile", "-v"},
			want: with(func(o *Options) { o.Detach = true }),
			pos:  []string{"--pidfile", "-v"}},
		{name: "lone dash is positional", args: []string{"-"}, want: base, pos: []string{"-"}},
		{name: "pidfile default",
			args: []string{"--pidfile"},
			want: with(func(o *Options) { o.Pidfile = "/run/rd/prog.pid" })},
		{name: "pidfile relative to rundir",
			args: []string{"--pidfile=x/p.pid"},
			want: with(func(o *Options) { o.Pidfile = "/run/rd/x/p.pid" })},
		{name: "pidfile absolute",
			args: []string{"--pidfile=/tmp/p.pid", "--overwrite-pidfile"},
			want: with(func(o *Options) { o.Pidfile, o.OverwritePidfile = "/tmp/p.pid", true })},
		{name: "optional arg does not take next word",
			args: []string{"--pidfile", "conf.db"},
			want: with(func(o *Options) { o.Pidfile = "/run/rd/prog.pid" }),
			pos:  []string{"conf.db"}},
		{name: "log-file default and relative",
			args: []string{"--log-file", "--log-file=rel.log"},
			want: with(func(o *Options) { o.LogFile = filepath.Join(cwd, "rel.log") })},
		{name: "log-file default",
			args: []string{"--log-file"},
			want: with(func(o *Options) { o.LogFile = "/log/ld/prog.log" })},
		{name: "unixctl",
			args: []string{"--unixctl=c.ctl"},
			want: with(func(o *Options) { o.Unixctl = "/run/rd/c.ctl" })},
		{name: "unixctl separate arg and none",
			args: []string{"--unixctl", "none"},
			want: with(func(o *Options) { o.Unixctl = "none" })},
		{name: "verbose forms",
			args: []string{"-v", "-vconsole:off", "--verbose", "--verbose=jsonrpc:file:dbg", "-vANY:syslog:err"},
			want: with(func(o *Options) {
				o.Verbose = []string{"", "console:off", "", "jsonrpc:file:dbg", "ANY:syslog:err"}
			})},
		{name: "ovs-ctl command line",
			args: []string{"--no-chdir", "--log-file=/l/ovsdb-server.log", "--pidfile=/r/ovsdb-server.pid",
				"--detach", "--monitor", "-vconsole:emer", "-vsyslog:err", "-vfile:info",
				"--no-self-confinement", "--remote=punix:/r/db.sock", "--remote", "db:Open_vSwitch,Open_vSwitch,manager_options",
				"--user", "root", "/etc/openvswitch/conf.db"},
			want: with(func(o *Options) {
				o.NoChdir, o.Detach, o.Monitor = true, true, true
				o.LogFile, o.Pidfile, o.User = "/l/ovsdb-server.log", "/r/ovsdb-server.pid", "root"
				o.Verbose = []string{"console:emer", "syslog:err", "file:info"}
			}),
			remotes: []string{"punix:/r/db.sock", "db:Open_vSwitch,Open_vSwitch,manager_options"},
			pos:     []string{"/etc/openvswitch/conf.db"}},
		{name: "unique prefix", args: []string{"--det", "--no-c"},
			want: with(func(o *Options) { o.Detach, o.NoChdir = true, true })},
		{name: "extra optional arg",
			args:  []string{"--embedded-db", "--embedded-db=/x.db"},
			want:  base,
			embed: []string{"", "/x.db"}},
		{name: "help and version", args: []string{"-h", "-V"},
			want: with(func(o *Options) { o.Help, o.Version = true, true })},
		{name: "clustered short options", args: []string{"-hvfile:dbg"},
			want: with(func(o *Options) { o.Help, o.Verbose = true, []string{"file:dbg"} })},
		{name: "syslog options", args: []string{"--syslog-method=udp:127.0.0.1:9", "--syslog-method=null", "--syslog-target", "h:1"},
			want: with(func(o *Options) { o.SyslogMethod, o.SyslogTarget = "udp:127.0.0.1:9", "h:1" })},
		{name: "bad syslog method", args: []string{"--syslog-method=tcp:1.2.3.4:5"}, err: "unsupported syslog method 'tcp:1.2.3.4:5'"},
		{name: "later syslog method unchecked", args: []string{"--syslog-method=null", "--syslog-method=tcp:x"},
			want: with(func(o *Options) { o.SyslogMethod = "null" })},

		{name: "unknown long", args: []string{"--bogus=1"}, err: "unrecognized option '--bogus=1'"},
		{name: "unknown short", args: []string{"-q"}, err: "invalid option -- 'q'"},
		{name: "no arg allowed", args: []string{"--detach=3"}, err: "option '--detach' doesn't allow an argument"},
		{name: "missing arg", args: []string{"--unixctl"}, err: "option '--unixctl' requires an argument"},
		{name: "ambiguous", args: []string{"--ver"}, err: "option '--ver' is ambiguous; possibilities: '--verbose' '--version'"},
		{name: "extra flag error", args: []string{"--remote=bad"}, err: "bad remote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var remotes, embed []string
			opts, pos, err := ParseFlags("prog", tc.args,
				Flag{Long: "remote", Arg: RequiredArg, Set: func(v string) error {
					if v == "bad" {
						return errString("bad remote")
					}
					remotes = append(remotes, v)
					return nil
				}},
				Flag{Long: "embedded-db", Arg: OptionalArg, Set: func(v string) error {
					embed = append(embed, v)
					return nil
				}})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*opts, tc.want) {
				t.Errorf("options\n got %+v\nwant %+v", *opts, tc.want)
			}
			if !reflect.DeepEqual(pos, tc.pos) {
				t.Errorf("positional = %q, want %q", pos, tc.pos)
			}
			if !reflect.DeepEqual(remotes, tc.remotes) || !reflect.DeepEqual(embed, tc.embed) {
				t.Errorf("remotes %q embed %q, want %q %q", remotes, embed, tc.remotes, tc.embed)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestRundirDefaults(t *testing.T) {
	t.Setenv("OVS_RUNDIR", "")
	t.Setenv("OVS_LOGDIR", "")
	if Rundir() != "/var/run/openvswitch" || Logdir() != "/var/log/openvswitch" {
		t.Fatalf("defaults: %q %q", Rundir(), Logdir())
	}
}

// FuzzGetopt: any command line either parses or gives an error, never
// panics, and a parse never returns more non-option arguments than given.
func FuzzGetopt(f *testing.F) {
	f.Add("-t\x00ovsdb-server\x00version")
	f.Add("--targ=x\x00-T5\x00--\x00-v")
	f.Add("-vconsole:off\x00--log-file\x00pos\x00--detach")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		var got []string
		flags := []Flag{
			{Long: "target", Short: 't', Arg: RequiredArg, Set: func(v string) error { got = append(got, v); return nil }},
			{Long: "timeout", Short: 'T', Arg: RequiredArg, Set: func(v string) error { got = append(got, v); return nil }},
			{Long: "verbose", Short: 'v', Arg: OptionalArg, Set: func(v string) error { got = append(got, v); return nil }},
			{Long: "help", Short: 'h', Set: func(string) error { return nil }},
		}
		for _, inOrder := range []bool{false, true} {
			pos, err := Getopt(args, flags, inOrder)
			if err == nil && len(pos) > len(args) {
				t.Fatalf("%q: %d non-option arguments from %d", args, len(pos), len(args))
			}
		}
	})
}
