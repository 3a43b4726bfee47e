#!/bin/bash
# crr.sh PREFIX N [C] : TCP connect/request/response/close rate from PREFIX-a to an nginx in PREFIX-b
# (ab without keep-alive: one new TCP connection per request, like netperf TCP_CRR), C concurrent (default 1).
# BENCH_ENDPOINT_TASKSET (e.g. "taskset -c 1") prefixes nginx and ab.
p=${1:-sw}; n=${2:-5000}; c=${3:-1}
d=$(mktemp -d)
trap '[ -f $d/nginx.pid ] && kill $(cat $d/nginx.pid) 2>/dev/null; sleep 0.2; rm -rf $d' EXIT
trap 'exit 130' INT TERM
cat > $d/nginx.conf <<C
worker_processes 1; daemon on; pid $d/nginx.pid; error_log $d/err.log;
events { worker_connections 4096; }
http { access_log off; server { listen 10.77.0.2:8080 backlog=4096; location / { return 200 "ok\n"; } } }
C
ip netns exec $p-b $BENCH_ENDPOINT_TASKSET nginx -c $d/nginx.conf -p $d
for i in $(seq 20); do [ -s $d/nginx.pid ] && break; sleep 0.1; done; sleep 0.3
timeout 90 ip netns exec $p-a $BENCH_ENDPOINT_TASKSET ab -q -r -s 5 -n $n -c $c http://10.77.0.2:8080/ 2>&1 | grep -E "Requests per second|Failed requests|Complete requests"
