# start-cluster.sh, sourced by the cluster benchmarks: start_cluster starts
# three nodes on 127.0.0.1 (ports from BASE: API BASE+11.., HTTP BASE+21..,
# Raft BASE+31..), n1 bootstrapping and the others joining it, and returns
# once all three report themselves alive. It needs BIN, WORK, BASE, the
# PIDS array (stopped by the caller's trap) and waitport; it sets api,
# http, raft, pids and servers. With PROFILE or HEAP set, the nodes serve pprof.
# With KAFKA set, each node also serves the Kafka protocol (BASE+41..) and
# kafka_servers names them.
# SERVE_ARGS (default empty), split on spaces, is added to every `logd serve`
# after the flags above, so it can override them (a later flag wins).
start_cluster() {
  api=(); http=(); raft=(); kafka=(); pids=()
  for i in 1 2 3; do
    api+=(127.0.0.1:$((BASE + 10 + i))); http+=($((BASE + 20 + i))); raft+=(127.0.0.1:$((BASE + 30 + i))); kafka+=(127.0.0.1:$((BASE + 40 + i)))
  done
  for i in 0 1 2; do
    if [ $i = 0 ]; then how=(--bootstrap); else how=(--join "${api[0]}"); fi
    if [ -n "${PROFILE:-}${HEAP:-}" ]; then how+=(--pprof); fi
    if [ -n "${KAFKA:-}" ]; then how+=(--kafka-addr "${kafka[$i]}"); fi
    read -r -a extra <<< "${SERVE_ARGS:-}"
    "$BIN" serve --data-dir "$WORK/n$i" --addr "${api[$i]}" --http-addr "127.0.0.1:${http[$i]}" --log-level warn \
      --node-id "n$((i + 1))" --raft-addr "${raft[$i]}" "${how[@]}" ${extra[@]+"${extra[@]}"} 2>"$WORK/n$i.log" &
    PIDS+=($!); pids+=($!)
    waitport "${api[$i]##*:}"
  done
  servers=$(IFS=,; echo "${api[*]}")
  kafka_servers=$(IFS=,; echo "${kafka[*]}")
  for _ in $(seq 1 100); do
    [ "$("$BIN" cluster status --server "$servers" 2>/dev/null | grep -c ' true')" = 3 ] && break; sleep 0.2
  done
}
