#!/usr/bin/env bash
# The main job: does knowledge help a small encoder tag diseases and chemicals?
# MiniLM fine-tuned on a fixed 160-sentence slice of BC5CDR (pipelines/demo-bc5cdr.yaml): no knowledge,
# HPO+MeSH token features and the concept attention prior, 2 seeds each, scored on a fixed
# test sample; then scripts/demo_summary.py prints entity F1 with the paired Δ, the
# dictionary alone, recall inside and outside the dictionary, one example sentence and
# where the files are (runs/demo-bc5cdr/). About 4-5 minutes on 2 idle CPU cores.
# The two seeds run side by side as one-thread processes (faster than one after the other
# on two cores, docs/benchmarks.md); their logs go to runs/demo-bc5cdr/logs/.
#   bash scripts/demo.sh                         # the BC5CDR demo
#   bash scripts/demo.sh --set data.test.sample=200   # extra arguments go to every priorkit call and the summary
#   bash scripts/demo.sh stsb [ARGS]             # the paper's setting: WordNet prior on 500 STS-B pairs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
pk=.venv/bin/priorkit
if [ "${1:-}" = stsb ]; then
    shift
    exec "$pk" sweep pipelines/demo.yaml "$@"
fi
P=pipelines/demo-bc5cdr.yaml
out=$("$pk" -q run "$P" "$@" --print-config | .venv/bin/python -c \
    'import sys, yaml; c = yaml.safe_load(sys.stdin); print(c.get("output_dir") or "runs/" + c["name"])')
logs="$out/logs"
mkdir -p "$logs"
start=$SECONDS
echo "[demo] MiniLM on 160 BC5CDR sentences: no knowledge, token features, attention prior; 2 seeds side by side"
echo "[demo] logs: $logs/seed0.log, $logs/seed1.log"
# the attention prior's word pairs first (DuckDB has one writer), then one lane per seed
"$pk" -q run "$P" --prior attention --steps precompute "$@" > "$logs/precompute.log" 2>&1 \
    || { cat "$logs/precompute.log" >&2; exit 1; }
lane() { "$pk" -q sweep "$P" --set train.threads=1 "${@:2}" --set "sweep.seeds=[$1]" > "$logs/seed$1.log" 2>&1; }
lane 0 "$@" & p0=$!
lane 1 "$@" & p1=$!
rc=0
wait $p0 || { rc=$?; echo "[demo] seed 0 failed (exit $rc): $logs/seed0.log" >&2; }
wait $p1 || { rc=$?; echo "[demo] seed 1 failed (exit $rc): $logs/seed1.log" >&2; }
[ $rc -eq 0 ] || { tail -n 20 "$logs"/seed*.log >&2; exit $rc; }
echo "[demo] trained and scored in $((SECONDS - start)) s"
"$pk" -q sweep "$P" "$@" --report-only > "$logs/report.log" 2>&1 || { cat "$logs/report.log" >&2; exit 1; }
.venv/bin/python scripts/demo_summary.py "$P" "$@"
echo "[demo] done in $((SECONDS - start)) s (after bootstrap)"
