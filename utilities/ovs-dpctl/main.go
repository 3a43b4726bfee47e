// Command ovs-dpctl shows and manages govs' datapath. Open vSwitch's
// ovs-dpctl talks to the kernel datapath; govs has only the userspace one,
// which lives inside ovs-vswitchd, so this one forwards each command to the
// running ovs-vswitchd's dpctl/* unixctl commands, as `ovs-appctl
// dpctl/COMMAND` does, through govs' ovs-appctl (next to this binary, else
// on PATH): the output is the daemon's.
//
//	ovs-dpctl [-s] [-m] [--names] [-t SECS] COMMAND [ARG...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/govs/govs/internal/daemon"
)

const program = "ovs-dpctl"

const usage = `ovs-dpctl: Open vSwitch datapath management utility
usage: ovs-dpctl [OPTIONS] COMMAND [ARG...]
  dump-dps                 display names of all datapaths
  show                     show basic info on all datapaths
  show DP...               show basic info on each DP
  dump-flows [DP]          display flows in DP
  del-flows [DP]           delete all flows from DP
  dump-conntrack [DP] [zone=ZONE]  display conntrack entries for ZONE
  flush-conntrack [DP] [zone=ZONE] [ct-tuple]delete matched conntrack entries in ZONE
  ct-stats-show [DP] [zone=ZONE] [verbose] CT connections grouped by protocol
  ct-bkts [DP] [gt=N] display connections per CT bucket
  ct-set-maxconns [DP] MAXCONNS  set the maximum conntrack entries
  ct-get-maxconns [DP]           get the maximum conntrack entries
  ct-get-nconns [DP]             get the number of conntrack entries
  ct-set-limits [DP] [default=LIMIT] [zone=ZONE,limit=LIMIT]...
  ct-get-limits [DP] [zone=ZONE1[,ZONE2]...]
  ct-del-limits [DP] zone=ZONE1[,ZONE2]...
  ipf-set-enabled [DP] v4|v6     enable fragment reassembly
  ipf-set-disabled [DP] v4|v6    disable fragment reassembly
  ipf-set-min-frag [DP] v4|v6 MINFRAG  set the minimum fragment size
  ipf-set-max-nfrags [DP] MAXFRAGS     set the most fragments held
  ipf-get-status [DP]            show fragment reassembly status (-m: lists)
govs' datapath is the userspace one inside ovs-vswitchd: each command is
ovs-vswitchd's dpctl/COMMAND (ovs-appctl dpctl/COMMAND).

Options for show:
  -s,  --statistics           print statistics for port or flow

Options for dump-flows:
  -m, --more                  increase verbosity of output
  --names                     use port names in output

Other options:
  -t, --timeout=SECS          give up after SECS seconds
  -h, --help                  display this help message
  -V, --version               display version information
`

// forwarded are the dpctl/* commands govs' ovs-vswitchd has.
var forwarded = []string{"dump-dps", "show", "dump-flows", "del-flows", "dump-conntrack", "flush-conntrack",
	"ct-stats-show", "ct-bkts", "ct-set-maxconns", "ct-get-maxconns", "ct-get-nconns", "ct-set-limits",
	"ct-get-limits", "ct-del-limits", "ct-enable-tcp-seq-chk", "ct-disable-tcp-seq-chk", "ct-get-tcp-seq-chk",
	"ipf-set-enabled", "ipf-set-disabled", "ipf-set-min-frag", "ipf-set-max-nfrags", "ipf-get-status"}

// kernelOnly are ovs-dpctl's commands that manage a kernel datapath's
// ports and flows directly, which govs' switch does itself.
var kernelOnly = []string{"add-dp", "del-dp", "add-if", "set-if", "del-if", "add-flow", "add-flows", "mod-flow",
	"mod-flows", "get-flow", "del-flow", "cache-get-size", "cache-set-size"}

func fatalf(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s\n", program, fmt.Sprintf(format, args...))
	return 1
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	var help, showVersion bool
	var timeout string
	var opts []string // dpctl/* options, passed after the command
	opt := func(name string) func(string) error {
		return func(string) error { opts = append(opts, name); return nil }
	}
	flags := []daemon.Flag{
		{Long: "statistics", Short: 's', Set: opt("-s")},
		{Long: "more", Short: 'm', Set: opt("-m")},
		{Long: "names", Set: opt("--names")},
		{Long: "no-names", Set: func(string) error { return nil }},
		{Long: "timeout", Short: 't', Arg: daemon.RequiredArg, Set: func(v string) error { timeout = v; return nil }},
		{Long: "help", Short: 'h', Set: func(string) error { help = true; return nil }},
		{Long: "version", Short: 'V', Set: func(string) error { showVersion = true; return nil }},
		{Long: "verbose", Short: 'v', Arg: daemon.OptionalArg, Set: func(string) error { return nil }},
	}
	cmd, err := daemon.Getopt(args, flags, false)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[0], err)
		return 1
	case help:
		fmt.Print(usage)
		return 0
	case showVersion:
		fmt.Print(daemon.VersionText(program, "3.1.0"))
		return 0
	case len(cmd) == 0:
		return fatalf("missing command name; use --help for help")
	}
	switch {
	case slices.Contains(kernelOnly, cmd[0]):
		return fatalf("'%s' is not supported: govs has no kernel datapath; its userspace datapath is managed by ovs-vswitchd (ovs-vsctl, ovs-ofctl)", cmd[0])
	case !slices.Contains(forwarded, cmd[0]):
		return fatalf("unknown command '%s'; use --help for help", cmd[0])
	}
	appctl := appctlPath()
	argv := []string{}
	if timeout != "" {
		argv = append(argv, "--timeout="+timeout)
	}
	argv = append(argv, "dpctl/"+cmd[0])
	argv = append(argv, opts...)
	argv = append(argv, cmd[1:]...)
	c := exec.Command(appctl, argv...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return 1
	}
	return fatalf("%s: %v", appctl, err)
}

// appctlPath is govs' ovs-appctl installed beside this program, else the
// one on PATH.
func appctlPath() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "ovs-appctl")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "ovs-appctl"
}
