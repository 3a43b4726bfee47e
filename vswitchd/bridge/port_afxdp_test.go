package bridge

import (
	"testing"

	"github.com/govs/govs/netdev"
)

func TestAFXDPParse(t *testing.T) {
	for _, tc := range []struct {
		opts     map[string]string
		want     netdev.AFXDPConfig
		err      string
		problems int
	}{
		{nil, netdev.AFXDPConfig{NeedWakeup: true, RxQueues: 1}, "", 0},
		{map[string]string{"xdp-mode": "Native", "use-need-wakeup": "false", "n_rxq": "2"},
			netdev.AFXDPConfig{Mode: netdev.XDPNative, RxQueues: 2}, "", 0},
		{map[string]string{"xdp-mode": "generic", "use-need-wakeup": "no"},
			netdev.AFXDPConfig{Mode: netdev.XDPGeneric, NeedWakeup: true, RxQueues: 1}, "", 1},
		{map[string]string{"xdp-mode": "drv"}, netdev.AFXDPConfig{}, "p1: Incorrect xdp-mode (drv).", 0},
		{map[string]string{"n_rxq": "17"}, netdev.AFXDPConfig{}, "p1: Too big 'n_rxq' (17 > 16).", 0},
		{map[string]string{"peer": "x"}, netdev.AFXDPConfig{NeedWakeup: true, RxQueues: 1}, "", 1},
	} {
		spec := IfaceSpec{Name: "p1", Type: TypeAFXDP, Options: tc.opts}
		var problems []string
		err := driverOf(TypeAFXDP).parse(&spec, parseEnv{}, &problems)
		if err != tc.err || len(problems) != tc.problems {
			t.Errorf("%v: error %q, problems %q; want %q and %d problems", tc.opts, err, problems, tc.err, tc.problems)
			continue
		}
		if err == "" && spec.AFXDP != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.opts, spec.AFXDP, tc.want)
		}
	}
}
