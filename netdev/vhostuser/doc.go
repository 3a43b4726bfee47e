// Package vhostuser owns govs' vhost-user ports: the back-end side of the
// vhost-user protocol (QEMU docs/interop/vhost-user.rst) and of virtio-net
// virtqueues, split and packed (virtio 1.1 §2.6, §2.7, §5.1), implemented
// in Go without DPDK, so that VMs and DPDK applications attach to the
// switch through a unix socket and shared memory. Client ports (OVS type
// dpdkvhostuserclient) connect to the front-end's socket and reconnect;
// server ports (dpdkvhostuser) serve one.
//
// The guest is untrusted: every address it hands over is translated and
// bounds-checked against the memory it shared, every descriptor is read
// once, chains and indirect tables are bounded, and a fault on its memory
// is recovered. A malformed frame is dropped and counted; a ring or a
// message that cannot be right drops the connection. Rings are read as
// little-endian, which is what VIRTIO_F_VERSION_1 specifies and what a
// legacy guest on a little-endian host uses; govs runs on little-endian
// hosts only.
package vhostuser
