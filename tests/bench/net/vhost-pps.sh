#!/bin/bash
# vhost-pps.sh DIR SIZE [SECONDS] : two DPDK testpmd instances with virtio-user vdevs as vhost-user socket SERVERS
# (server=1), DIR/tx.sock (txonly, SIZE-byte frames to 02:00:00:00:00:02, a MAC no switch has learnt, so a NORMAL
# bridge floods them) and DIR/rx.sock (rxonly). The switch under test attaches two vhost-user CLIENT ports to them
# (port 1 -> tx.sock, port 2 -> rx.sock), before or within a few seconds after this starts; client ports retry
# every second. Prints "size S tx_kpps T rx_kpps R": medians of the 2 s samples with frames, the first such sample
# (connection ramp) and the last (partial) dropped (an even count averages the middle two), then "tx_series" and
# "rx_series": every sample in kpps. Both testpmd forwarding threads share CPU 0, leaving CPU 1 to the switch;
# 4096-entry rings keep the scheduler's time slices from emptying the receiver's ring.
# Adapted from /work/shared/bench/vhost-pps.sh: DPDK file prefixes unique to this run, cleanup by pid, logs kept
# in DIR. Hugepages: raised to 1024 if fewer (run.sh restores the old count).
d=$1; size=${2:-64}; secs=${3:-16}; id=vp$$; rx=; tx=
trap '[ -n "$tx" ] && kill $tx 2>/dev/null; [ -n "$rx" ] && kill $rx 2>/dev/null; wait 2>/dev/null; rm -rf /dev/hugepages/${id}* /var/run/dpdk/${id}*' EXIT
trap 'exit 130' INT TERM
[ $(cat /proc/sys/vm/nr_hugepages) -ge 1024 ] || echo 1024 > /proc/sys/vm/nr_hugepages
mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
tp() { timeout $secs dpdk-testpmd --lcores '0@0,1@0' --file-prefix=$id$1 --socket-mem 256 --single-file-segments --no-pci \
  --vdev "net_virtio_user0,path=$d/$1.sock,server=1,queues=1,queue_size=4096" -- --total-num-mbufs=32768 --rxd=4096 --txd=4096 \
  --forward-mode=$2 --txpkts=$size --eth-peer=0,02:00:00:00:00:02 --stats-period 2 </dev/null >$d/$1.log 2>&1 & }
tp rx rxonly; rx=$!; tp tx txonly; tx=$!
wait $tx; tx=; wait $rx; rx=
med() { grep -a "$1" $d/$2.log | awk '{if ($2 > 0) print int($2/1000)}' | sed '$d' | sed '1d' | sort -n |
  awk '{a[NR]=$1} END {print (NR ? int((a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2) : 0)}'; }
echo "size $size tx_kpps $(med Tx-pps: tx) rx_kpps $(med Rx-pps: rx)"
ser() { grep -a "$1" $d/$2.log | awk '{printf " %d", int($2/1000)}'; }
echo "tx_series$(ser Tx-pps: tx)"; echo "rx_series$(ser Rx-pps: rx)"
