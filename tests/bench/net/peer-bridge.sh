#!/bin/bash
# peer-bridge.sh up|down : the kernel's Linux bridge lbr0 joining lb-a0 and lb-b0 from topo.sh
# (env LB_PREFIX overrides lb).
here=$(dirname $0); p=${LB_PREFIX:-lb}
case "$1" in
up) $here/topo.sh up $p; ip link add lbr0 type bridge; ip link set lbr0 up
    ip link set $p-a0 master lbr0; ip link set $p-b0 master lbr0; sleep 1 ;;
down) $here/topo.sh down $p; ip link del lbr0 2>/dev/null ;;
esac
