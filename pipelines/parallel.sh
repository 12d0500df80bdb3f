#!/usr/bin/env bash
# Runs a sweep's (fraction, seed) cells as one-thread processes side by side, then writes
# its report over every finished cell. The first cell runs alone: it fills the prior
# caches (DuckDB has one writer); the others then open them read-only. When the caches
# are already filled (an earlier run of the same pipeline), FIRST_ALONE=0 skips that wait.
#   pipelines/parallel.sh JOBS PIPELINE "FRACTIONS" "SEEDS" [--set KEY=VALUE ...]
#   pipelines/parallel.sh 2 pipelines/bc5cdr-curve.yaml "0.01 0.02" "0 1 2 3 4"
# CELLS="1.0:0 1.0:1 0.2:0 ..." runs those (fraction:seed) cells in that order instead of every
# fraction x seed (put the longest first); the report then covers FRACTIONS x SEEDS.
# Each cell's log and wall time go to $LOGDIR (default runs/logs/<pipeline name>/).
# REPORT=0 skips the closing report (e.g. when two of these share the cores as lanes).
# Run nothing else heavy beside it: each cell's time is only comparable on idle cores.
set -uo pipefail
[ $# -ge 4 ] || { sed -n 2,8p "$0" >&2; exit 2; }
jobs=$1 pipeline=$2 fractions=$3 seeds=$4; shift 4
pk=${PRIORKIT:-priorkit}
logdir=${LOGDIR:-runs/logs/$(basename "$pipeline" .yaml)}
mkdir -p "$logdir"
times="$logdir/times.tsv"
[ -f "$times" ] || printf 'fraction\tseed\tstart\tseconds\texit\tload_after\n' > "$times"

run_cell() {  # fraction seed [--set ...]
  local f=$1 s=$2; shift 2
  local t0; t0=$(date +%s)
  "$pk" -q sweep "$pipeline" --set "sweep.fractions=[$f]" --set "sweep.seeds=[$s]" \
    --set train.threads=1 "$@" > "$logdir/f$f-s$s.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$s" "$(date -u -d @"$t0" +%FT%TZ)" "$(( $(date +%s) - t0 ))" \
    "$rc" "$(cut -d' ' -f1 /proc/loadavg)" >> "$times"
  [ $rc -eq 0 ] || echo "cell fraction $f seed $s failed (exit $rc): $logdir/f$f-s$s.log" >&2
}

cells=()
if [ -n "${CELLS:-}" ]; then
  for c in $CELLS; do cells+=("${c%%:*} ${c#*:}"); done
else
  for f in $fractions; do for s in $seeds; do cells+=("$f $s"); done; done
fi
first=${FIRST_ALONE:-1}
for cell in "${cells[@]}"; do
  if [ $first -eq 1 ]; then run_cell ${cell% *} ${cell#* } "$@"; first=0; continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_cell ${cell% *} ${cell#* } "$@" &
done
wait
[ "${REPORT:-1}" = 0 ] && exit 0
flist="[$(echo $fractions | sed 's/ /, /g')]"
slist="[$(echo $seeds | sed 's/ /, /g')]"
"$pk" sweep "$pipeline" --report-only --set "sweep.fractions=$flist" --set "sweep.seeds=$slist" "$@"
