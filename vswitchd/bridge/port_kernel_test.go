package bridge

import (
	"testing"
)

// n_rxq as OVS's AF_XDP ports read it: MAX(smap_get_int(n_rxq, 1), 1),
// above 16 refused with its error; tap and internal devices take it too.
func TestKernelPortRxQueues(t *testing.T) {
	for _, tc := range []struct {
		typ, v   string
		want     int
		err      string
		problems int
	}{
		{TypeSystem, "", 1, "", 0},
		{TypeSystem, "2", 2, "", 0},
		{TypeSystem, "16", 16, "", 0},
		{TypeSystem, "17", 1, "eth0: Too big 'n_rxq' (17 > 16).", 0},
		{TypeSystem, "0", 1, "", 1},
		{TypeSystem, "-3", 1, "", 1},
		{TypeSystem, "two", 1, "", 1},
		{TypeInternal, "2", 2, "", 0},
		{TypeTap, "4", 4, "", 0},
		{TypeTap, "17", 1, "eth0: Too big 'n_rxq' (17 > 16).", 0},
		{TypeInternal, "x", 1, "", 1},
	} {
		spec := IfaceSpec{Name: "eth0", Type: tc.typ, Options: map[string]string{}}
		if tc.v != "" {
			spec.Options[OptNRxq] = tc.v
		}
		var problems []string
		err := driverOf(tc.typ).parse(&spec, parseEnv{}, &problems)
		if spec.RxQueues != tc.want || err != tc.err || len(problems) != tc.problems {
			t.Errorf("%s n_rxq=%q: queues %d, error %q, problems %q; want %d, %q, %d",
				tc.typ, tc.v, spec.RxQueues, err, problems, tc.want, tc.err, tc.problems)
		}
	}
	for _, typ := range []string{TypeSystem, TypeInternal, TypeTap} {
		if !driverOf(typ).live(OptNRxq) {
			t.Errorf("n_rxq must be live on %s ports", typ)
		}
	}
	a := IfaceSpec{Type: TypeSystem, Options: map[string]string{OptNRxq: "1"}}
	b := IfaceSpec{Type: TypeSystem, Options: map[string]string{OptNRxq: "4"}}
	if a.identity() != b.identity() {
		t.Error("an n_rxq change re-creates the interface")
	}
}
