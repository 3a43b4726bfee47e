package main

import "github.com/govs/govs/internal/daemon"

// registerCommands adds ovs-vswitchd's unixctl commands, with OVS's usage
// strings and output formats.
func (v *switchd) registerCommands(u *daemon.UnixctlServer) {
	if u == nil {
		return
	}
	u.Register("exit", "[--cleanup]", 0, 1, func(args []string) (string, error) {
		v.exit(len(args) == 1 && args[0] == "--cleanup")
		return "", nil
	})
	u.Register("memory/show", "", 0, 0, func([]string) (string, error) {
		cells := 0
		if c := v.conn.Load(); c != nil {
			cells = c.IDLCells()
		}
		return v.sw.Memory(cells), nil
	})
	u.Register("coverage/show", "", 0, 0, func([]string) (string, error) {
		return v.cov.Show(), nil
	})
	u.Register("dpif/show", "", 0, 0, func([]string) (string, error) {
		return v.sw.DpifShow(), nil
	})
	u.Register("dpctl/show", "[-s] [dp...]", 0, 64, v.sw.DpctlShow)
	u.Register("dpctl/dump-dps", "", 0, 0, func([]string) (string, error) {
		return v.sw.DumpDps(), nil
	})
	u.Register("fdb/show", "bridge", 1, 1, func(args []string) (string, error) {
		return v.sw.FDBShow(args[0])
	})
	u.Register("fdb/stats-show", "bridge", 1, 1, func(args []string) (string, error) {
		return v.sw.FDBStatsShow(args[0])
	})
	u.Register("fdb/flush", "[bridge]", 0, 1, func(args []string) (string, error) {
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		if err := v.sw.FDBFlush(name); err != nil {
			return "", err
		}
		return "table successfully flushed\n", nil
	})
}
