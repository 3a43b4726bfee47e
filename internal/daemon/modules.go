package daemon

// The vlog modules Debian's Open vSwitch 3.1 daemons list in "ovs-appctl
// vlog/list". A govs daemon registers all of its program's, so that every
// -vMODULE:... spec and "vlog/set" that works with OVS works with govs too
// (modules govs has no code for simply never log).
var (
	vswitchdModules = []string{
		"backtrace", "bfd", "bond", "bridge", "bundle", "bundles", "cfm", "collectors", "command_line",
		"connmgr", "conntrack", "conntrack_tp", "coverage", "ct_dpif", "daemon", "daemon_unix",
		"dns_resolve", "dpdk", "dpif", "dpif_lookup_autovalidator", "dpif_lookup_generic",
		"dpif_mfex_extract_study", "dpif_netdev", "dpif_netdev_extract", "dpif_netdev_impl",
		"dpif_netdev_lookup", "dpif_netlink", "dpif_netlink_rtnl", "entropy", "fail_open", "fatal_signal",
		"flow", "hmap", "in_band", "ipf", "ipfix", "jsonrpc", "lacp", "lldp", "lldpd", "lldpd_structs",
		"lockfile", "memory", "meta_flow", "native_tnl", "netdev", "netdev_afxdp", "netdev_dummy",
		"netdev_linux", "netdev_offload", "netdev_offload_tc", "netdev_vport", "netflow", "netlink",
		"netlink_conntrack", "netlink_notifier", "netlink_socket", "nx_match", "odp_execute",
		"odp_execute_impl", "odp_util", "ofp_actions", "ofp_bundle", "ofp_connection", "ofp_errors",
		"ofp_flow", "ofp_group", "ofp_match", "ofp_meter", "ofp_monitor", "ofp_msgs", "ofp_packet",
		"ofp_port", "ofp_protocol", "ofp_queue", "ofp_table", "ofp_util", "ofproto", "ofproto_dpif",
		"ofproto_dpif_mirror", "ofproto_dpif_monitor", "ofproto_dpif_rid", "ofproto_dpif_upcall",
		"ofproto_dpif_xlate", "ofproto_xlate_cache", "ovs_lldp", "ovs_numa", "ovs_rcu", "ovs_replay",
		"ovs_router", "ovs_thread", "ovsdb_cs", "ovsdb_error", "ovsdb_idl", "ox_stat", "pcap", "pmd_perf",
		"poll_loop", "process", "rconn", "reconnect", "route_table", "rstp", "rstp_sm", "sflow", "sha1",
		"signals", "socket_util", "socket_util_unix", "stp", "stream", "stream_fd", "stream_replay",
		"stream_ssl", "stream_tcp", "stream_unix", "svec", "system_stats", "tc", "timeval", "tunnel",
		"unixctl", "userspace_tso", "util", "uuid", "vconn", "vconn_stream", "vlog", "vswitchd",
	}
	ovsdbServerModules = []string{
		"backtrace", "bundle", "command_line", "conntrack", "conntrack_tp", "coverage", "ct_dpif", "daemon",
		"daemon_unix", "dns_resolve", "dpdk", "dpif", "dpif_lookup_autovalidator", "dpif_lookup_generic",
		"dpif_mfex_extract_study", "dpif_netdev", "dpif_netdev_extract", "dpif_netdev_impl",
		"dpif_netdev_lookup", "dpif_netlink", "dpif_netlink_rtnl", "entropy", "fatal_signal", "flow",
		"hmap", "ipf", "jsonrpc", "lockfile", "memory", "meta_flow", "native_tnl", "netdev", "netdev_afxdp",
		"netdev_linux", "netdev_offload", "netdev_offload_tc", "netdev_vport", "netlink",
		"netlink_conntrack", "netlink_notifier", "netlink_socket", "nx_match", "odp_execute",
		"odp_execute_impl", "odp_util", "ofp_actions", "ofp_bundle", "ofp_connection", "ofp_errors",
		"ofp_flow", "ofp_group", "ofp_match", "ofp_meter", "ofp_monitor", "ofp_msgs", "ofp_packet",
		"ofp_port", "ofp_protocol", "ofp_queue", "ofp_table", "ofp_util", "ovs_numa", "ovs_rcu",
		"ovs_replay", "ovs_router", "ovs_thread", "ovsdb", "ovsdb_cs", "ovsdb_error", "ovsdb_file",
		"ovsdb_idl", "ovsdb_jsonrpc_server", "ovsdb_log", "ovsdb_monitor", "ovsdb_rbac", "ovsdb_server",
		"ovsdb_util", "ox_stat", "pmd_perf", "poll_loop", "process", "raft", "raft_rpc", "reconnect",
		"relay", "replication", "route_table", "sha1", "signals", "socket_util", "socket_util_unix",
		"storage", "stream", "stream_fd", "stream_replay", "stream_ssl", "stream_tcp", "stream_unix",
		"svec", "tc", "timeval", "transaction", "transaction_forward", "trigger", "unixctl",
		"userspace_tso", "util", "uuid", "vlog",
	}
)

// RegisterOVSModules registers on log the vlog modules OVS 3.1's program
// ("ovs-vswitchd" or "ovsdb-server") has.
func RegisterOVSModules(log *Logger, program string) {
	mods := vswitchdModules
	if program == "ovsdb-server" {
		mods = ovsdbServerModules
	}
	for _, m := range mods {
		log.Module(m)
	}
}
