package bridge

import "fmt"

// TypePatch connects two bridges: no device, no datapath port; the
// OpenFlow switches forward between the two ends (options:peer).
const TypePatch = "patch"

type patchPort struct{ noLive }

func init() { registerPort(TypePatch, patchPort{}) }

func (patchPort) kind() PortKind                      { return KindPatch }
func (patchPort) request(*Switch, *iface) OpenRequest { return OpenRequest{} }
func (patchPort) attach(*Switch, *iface) bool         { return true }
func (patchPort) apply(*Switch, *iface, bool)         {}
func (patchPort) refresh(*Switch, *iface)             {}
func (patchPort) netdevType(ifc *iface) string        { return "patch: peer=" + ifc.spec.PatchPeer }

func (patchPort) status(_ *iface, st *IfaceStatus) {
	st.Link = &LinkStatus{AdminUp: true, LinkUp: true, HasIfindex: true}
}

// parse validates a patch port's options the way OVS does
// (lib/netdev-vport.c set_patch_config), returning its error text.
func (patchPort) parse(spec *IfaceSpec, _ parseEnv, _ *[]string) string {
	name, peer := spec.Name, ""
	for k, v := range spec.Options {
		if k != "peer" {
			return fmt.Sprintf("%s: unknown patch argument '%s'", name, k)
		}
		peer = v
	}
	if peer == "" {
		return fmt.Sprintf("%s: patch type requires valid 'peer' argument", name)
	}
	if peer == name {
		return fmt.Sprintf("%s: patch peer must not be self", name)
	}
	spec.PatchPeer = peer
	return ""
}
