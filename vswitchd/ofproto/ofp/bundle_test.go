package ofp

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readRequest returns a message of testdata/requests.
func readRequest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "requests", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The seeds in testdata/requests/bundle-* are bundle messages as OpenFlow
// 1.3 (ONF), 1.4 and 1.5 carry them; Debian's `ovs-ofctl ofp-print`
// decodes each as named.
func TestDecodeBundle(t *testing.T) {
	read := func(name string) []byte { return readRequest(t, name) }
	for _, v := range []string{"of13", "of14", "of15"} {
		m, err := Decode(read("bundle-open-" + v + ".bin"))
		if bc, ok := m.(*BundleControl); err != nil || !ok || bc.ID != 1 || bc.Type != BundleOpenRequest || bc.Flags != BundleAtomic|BundleOrdered || bc.Xid != 5 {
			t.Errorf("%s open: %+v %v", v, m, err)
		}
		m, err = Decode(read("bundle-commit-" + v + ".bin"))
		if bc, ok := m.(*BundleControl); err != nil || !ok || bc.Type != BundleCommitRequest {
			t.Errorf("%s commit: %+v %v", v, m, err)
		}
		m, err = Decode(read("bundle-addflow-" + v + ".bin"))
		ba, ok := m.(*BundleAdd)
		if err != nil || !ok || ba.ID != 1 || ba.Flags != 3 || ba.Xid != 7 {
			t.Fatalf("%s add: %+v %v", v, m, err)
		}
		if fm, ok := ba.Msg.(*FlowMod); !ok || fm.Xid != 7 || fm.Command != FlowAdd || int(fm.Length) != len(ba.Raw) {
			t.Errorf("%s added message: %+v", v, ba.Msg)
		}
	}
	for _, v := range []string{"of13", "of15"} {
		m, err := Decode(read("bundle-addgroup-" + v + ".bin"))
		if ba, ok := m.(*BundleAdd); err != nil || !ok {
			t.Errorf("%s group: %v", v, err)
		} else if _, ok := ba.Msg.(*GroupMod); !ok {
			t.Errorf("%s group: %+v", v, ba.Msg)
		}
	}
	for name, want := range map[string]string{
		"bundle-addbarrier-of14.bin": "error OFPBFC_MSG_UNSUP",
		"bundle-addbadxid-of14.bin":  "error OFPBFC_MSG_BAD_XID",
	} {
		if got := describe(Decode(read(name))); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	open14 := read("bundle-open-of14.bin")
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"short control":        {open14[:12], "error OFPBRC_BAD_LEN"},
		"control + 4 bytes":    {append(bytes.Clone(open14), 0, 0, 0, 0), "error OFPBRC_BAD_LEN"},
		"add without message":  {[]byte{5, 34, 0, 20, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 5, 20, 0, 8}, "error OFPBFC_MSG_BAD_LEN"},
		"inner longer":         {[]byte{5, 34, 0, 24, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 5, 20, 0, 9, 0, 0, 0, 1}, "error OFPBFC_MSG_BAD_LEN"},
		"inner of 1.3":         {[]byte{5, 34, 0, 24, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 4, 14, 0, 8, 0, 0, 0, 1}, "error OFPBFC_BAD_VERSION"},
		"ONF type unknown":     {[]byte{4, 4, 0, 16, 0, 0, 0, 1, 0x4f, 0x4e, 0x46, 0, 0, 0, 9, 0}, "error OFPBRC_BAD_SUBTYPE"},
		"OF1.4 control in 1.3": {append([]byte{4, 33}, open14[2:]...), "error OFPBRC_BAD_TYPE"},
	} {
		if got := describe(Decode(c.b)); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}

// TestBundleReplies checks the replies and errors with Debian's
// ovs-ofctl ofp-print.
func TestBundleReplies(t *testing.T) {
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Fatal("ovs-ofctl is missing: install openvswitch-common")
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{EncodeBundleReply(V13, 9, 1, BundleCommitReply), "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x9):\n bundle_id=0x1 type=COMMIT_REPLY flags=0"},
		{EncodeBundleReply(V14, 9, 2, BundleOpenReply), "OFPT_BUNDLE_CONTROL (OF1.4) (xid=0x9):\n bundle_id=0x2 type=OPEN_REPLY flags=0"},
		{EncodeBundleReply(V15, 9, 3, BundleDiscardReply), "OFPT_BUNDLE_CONTROL (OF1.5) (xid=0x9):\n bundle_id=0x3 type=DISCARD_REPLY flags=0"},
		{EncodeBundleControl(V13, 5, 0, BundleOpenRequest, BundleAtomic|BundleOrdered), "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x5):\n bundle_id=0 type=OPEN_REQUEST flags=atomic ordered"},
		{EncodeBundleControl(V15, 5, 2, BundleCommitRequest, BundleOrdered), "OFPT_BUNDLE_CONTROL (OF1.5) (xid=0x5):\n bundle_id=0x2 type=COMMIT_REQUEST flags=ordered"},
		{EncodeBundleAdd(V13, 0, BundleAtomic, EncodeFlowMod(V13, 7, &FlowMod{BufferID: 0xffffffff, Table: 0xff})), "ONFT_BUNDLE_ADD_MESSAGE (OF1.3) (xid=0x7):\n bundle_id=0 flags=atomic"},
		{EncodeBundleAdd(V14, 1, BundleAtomic|BundleOrdered, EncodeFlowMod(V14, 7, &FlowMod{BufferID: 0xffffffff})), "OFPT_BUNDLE_ADD_MESSAGE (OF1.4) (xid=0x7):\n bundle_id=0x1 flags=atomic ordered"},
		{EncodeError(V13, 4, BundleMsgFailed, nil), "OFPT_ERROR (OF1.3) (xid=0x4): OFPBFC_MSG_FAILED"},
		{EncodeError(V14, 4, BundleTimeout, nil), "OFPT_ERROR (OF1.4) (xid=0x4): OFPBFC_TIMEOUT"},
		{EncodeError(V15, 4, BundleBadVersion, nil), "OFPT_ERROR (OF1.5) (xid=0x4): OFPBFC_BAD_VERSION"},
	} {
		out, err := exec.Command(ofctl, "ofp-print", hex.EncodeToString(c.b)).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(got, c.want) {
			t.Errorf("ofp-print %x: %v\n%s\nwant %s", c.b, err, got, c.want)
		}
	}
}
