package ofproto

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// NXT_RESUME with a continuation not made by the bridge (another
// bridge's, a previous run's, or none) is refused with NXR_STALE, as
// OVS's xlate_resume; the right bridge's runs.
func TestResumeStale(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{})
	other := tb.bridge("br1", BridgeConfig{})
	frame := eth("00:00:00:00:00:01", "00:00:00:00:00:02")
	r := &ofp.Resume{Data: frame}
	r.Metadata.Flow.InPort = ofp.PortLocal
	for name, c := range map[string]*ofp.Continuation{"none": nil, "other bridge": {Bridge: other.uuid}, "zero": {}} {
		r.Continuation = c
		if err := br.Resume(r); err == nil || err.Errno != ofp.NXRStale {
			t.Errorf("%s: %v, want NXR_STALE", name, err)
		}
	}
	r.Continuation = &ofp.Continuation{Bridge: br.uuid}
	if err := br.Resume(r); err != nil {
		t.Errorf("own continuation: %v", err)
	}
}
