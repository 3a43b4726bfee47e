// Command detachtest is a minimal daemon built by the daemon package's
// tests to exercise --detach, pidfiles and unixctl as a separate process.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/govs/govs/internal/daemon"
)

const program = "detachtest"

func main() {
	failBeforeReady := false
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], daemon.Flag{
		Long: "fail-before-ready",
		Set:  func(string) error { failBeforeReady = true; return nil },
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
	if opts.Help {
		fmt.Printf("%s: test daemon\nusage: %s [OPTIONS]\n%s", program, program, daemon.Usage(program))
		return
	}
	if opts.Version {
		fmt.Println(daemon.VersionString(program, "0.0.1"))
		return
	}
	log := daemon.NewLogger(os.Stderr)
	mod := log.Module("detachtest")
	d, err := daemon.Start(program, "0.0.1", opts, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
	if failBeforeReady {
		fmt.Fprintf(os.Stderr, "%s: failing before ready\n", program)
		d.Close()
		os.Exit(3)
	}
	mod.Infof("%s", daemon.VersionString(program, "0.0.1"))
	exit := make(chan struct{})
	d.Unixctl.Register("exit", "", 0, 0, func([]string) (string, error) {
		close(exit)
		return "", nil
	})
	d.Unixctl.Register("test/echo", "[ARG]...", 0, 10, func(a []string) (string, error) {
		return strings.Join(append(args, a...), " "), nil
	})
	d.Unixctl.Register("test/cwd", "", 0, 0, func([]string) (string, error) {
		return os.Getwd()
	})
	d.Unixctl.Register("test/crash", "", 0, 0, func([]string) (string, error) {
		go panic("test/crash")
		return "", nil
	})
	d.HandleSignals(nil)
	d.Ready()
	<-exit
	mod.Infof("exiting")
	d.Exit(0)
}
