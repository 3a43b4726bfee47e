#!/bin/bash
# pps.sh PREFIX : 64-byte frames from DPDK testpmd (txonly, af_packet vdev) in PREFIX-a to testpmd (rxonly) in
# PREFIX-b; prints the offered and received kpps (medians of the non-zero 2 s samples, the partial last one
# dropped). Needs dpdk-dev + hugepages (set here if fewer than 512). PPS_LOGS=DIR keeps testpmd's logs.
# PPS_TXARGS adds testpmd options to the sender, e.g. --txonly-multi-flow (DPDK 22.11: the IPv4 source address
# cycles through 256 values per lcore, MACs and UDP ports fixed).
p=${1:-sw}; d=$(mktemp -d); rx=; tx=
trap '[ -n "$tx" ] && kill $tx 2>/dev/null; [ -n "$rx" ] && kill $rx 2>/dev/null; wait 2>/dev/null; [ -n "$PPS_LOGS" ] && cp $d/*.log $PPS_LOGS/ 2>/dev/null; rm -rf $d /var/run/dpdk/pps-rx-$$ /var/run/dpdk/pps-tx-$$ /dev/hugepages/pps-rx-$$map_* /dev/hugepages/pps-tx-$$map_*' EXIT
trap 'exit 130' INT TERM
[ $(cat /proc/sys/vm/nr_hugepages) -ge 512 ] || echo 512 > /proc/sys/vm/nr_hugepages
mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
vdev='net_af_packet0,iface=eth0,blocksz=4096,framesz=2048,framecnt=2048,qpairs=1'
ip netns exec $p-b timeout 40 dpdk-testpmd -l 0,1 --file-prefix=pps-rx-$$ --socket-mem 128 --no-pci --vdev $vdev -- \
  --total-num-mbufs=8192 --forward-mode=rxonly --stats-period 2 </dev/null >$d/rx.log 2>&1 & rx=$!
for i in $(seq 100); do grep -aq 'packet forwarding - ports' $d/rx.log && break; sleep 0.1; done
ip netns exec $p-a timeout 14 dpdk-testpmd -l 0,1 --file-prefix=pps-tx-$$ --socket-mem 128 --no-pci --vdev $vdev -- \
  --total-num-mbufs=8192 --forward-mode=txonly --txpkts=64 $PPS_TXARGS --stats-period 2 </dev/null >$d/tx.log 2>&1 & tx=$!
wait $tx; tx=; sleep 2.5; kill $rx 2>/dev/null; wait $rx; rx=
med() { grep -a "$1" $2 | awk '{if ($2 > 0) print int($2/1000)}' | sed '$d' | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}'; }
echo "tx_kpps $(med Tx-pps: $d/tx.log) rx_kpps $(med Rx-pps: $d/rx.log)"
