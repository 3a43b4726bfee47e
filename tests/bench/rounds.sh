# rounds.sh, sourced by the bench scripts: rounds ROUNDS PEER... runs the caller's `measure PEER` for each
# peer, round by round, in reverse order every other round (so that a changing load falls on all alike),
# logging to stderr and collecting each output, ";"-terminated, in the caller's associative array res.
rounds() {
  local n=$1 r peer out; shift
  for r in $(seq $n); do
    local order=("$@"); [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "$@" | tac))
    for peer in "${order[@]}"; do
      echo "round $r/$n: $peer" >&2
      out=$(measure $peer); echo "  $peer: $out" >&2
      res[$peer]+="$out;"
    done
  done
}
