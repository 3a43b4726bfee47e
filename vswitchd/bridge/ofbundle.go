package bridge

import "github.com/govs/govs/vswitchd/ofproto/ofp"

// ofBundler is an OFBridge that takes OpenFlow bundles (ofproto.Bridge).
type ofBundler interface {
	CheckBundled(m ofp.Message) (ofp.Message, *ofp.Error)
	CommitBundle(msgs []ofp.Message) (int, *ofp.Error)
}

// CheckBundled checks a message added to a bundle and returns what the
// bundle keeps of it.
func (o ofSource) CheckBundled(m ofp.Message) (ofp.Message, *ofp.Error) {
	b, ok := o.of().(ofBundler)
	if !ok {
		return nil, &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return b.CheckBundled(m)
}

// CommitBundle commits a bundle's messages, all or none.
func (o ofSource) CommitBundle(msgs []ofp.Message) (int, *ofp.Error) {
	b, ok := o.of().(ofBundler)
	if !ok {
		return 0, &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return b.CommitBundle(msgs)
}
