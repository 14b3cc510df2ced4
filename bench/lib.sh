# lib.sh: what the benchmark scripts that start logd processes share,
# sourced once $WORK (their scratch directory) is set: PIDS, the processes
# started (each script appends to it), stopped by stopall and on exit, when
# $WORK is removed too; waitport, which waits for a port on 127.0.0.1 to
# open; cpu, a process's user + system seconds from /proc.
PIDS=()
stopall() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  stopall
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
waitport() { for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }
ticks=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; } # seconds of user + system
