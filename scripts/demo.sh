#!/usr/bin/env bash
# The main job: the product's best on a small slice of BC5CDR (diseases and chemicals), beside no
# knowledge and the dictionary alone.  pipelines/demo-bc5cdr.yaml is the recipe of record
# (pipelines/bc5cdr-mix.yaml: two self-trained MiniLM students, with and without token features,
# mixed word by word, Viterbi, then the dictionary read as a document) on a slice small enough for
# about 5 minutes on 2 idle CPU cores (docs/benchmarks.md#the-demo).  Steps:
#   1. the models, in two one-thread lanes side by side: none then st-nofeat (whose teacher is
#      none's kept model, copied), and st-branch (its own teacher with token features);
#   2. `priorkit sweep`: the trained runs are skipped; the post-hoc arms (the mix, the document
#      pass) and the baselines (the dictionary alone and calibrated, by sentence and as a document);
#   3. `priorkit export`: the recipe (st-mix-doc) as one folder, $out/recipe, as soon as the sweep has
#      scored that arm (the baselines go on beside it);
#   4. `priorkit predict`: that folder tags a raw abstract (data/examples/bc5cdr-abstract.txt);
#   5. scripts/demo_summary.py: F1 of every row, the recipe's Δ with its 95% CI against each,
#      recall inside and outside the dictionary, and the abstract's entities with offsets and IDs.
# Logs go to runs/demo-bc5cdr/logs/.
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
ABSTRACT=data/examples/bc5cdr-abstract.txt
read -r out frac seeds < <("$pk" -q sweep "$P" "$@" --print-config | .venv/bin/python -c \
    'import sys, yaml; c = yaml.safe_load(sys.stdin)
print(c.get("output_dir") or "runs/" + c["name"], "%g" % c["sweep"]["fractions"][0], " ".join(map(str, c["sweep"]["seeds"])))')
logs="$out/logs"
mkdir -p "$logs"
start=$SECONDS
echo "[demo] the BC5CDR recipe on a small slice ($P), seeds $seeds: two lanes side by side"
echo "[demo] logs: $logs/"
one() {  # ARM SEED [ARGS]: train and score one run on one thread
    "$pk" -q run "$P" --prior "$1" --set train.threads=1 --set "train.seed=$2" "${@:3}" > "$logs/$1-seed$2.log" 2>&1
}
lane_a() { for s in $seeds; do one none "$s" "$@" && one st-nofeat "$s" "$@" || return; done; echo $((SECONDS - start)) > "$logs/lane-a.s"; }
lane_b() { for s in $seeds; do one st-branch "$s" "$@" || return; done; echo $((SECONDS - start)) > "$logs/lane-b.s"; }
lane_a "$@" & pa=$!
lane_b "$@" & pb=$!
rc=0
wait $pa || { rc=$?; echo "[demo] lane none + st-nofeat failed (exit $rc)" >&2; }
wait $pb || { rc=$?; echo "[demo] lane st-branch failed (exit $rc)" >&2; }
[ $rc -eq 0 ] || { tail -n 20 "$logs"/*-seed*.log >&2; exit $rc; }
train_s=$((SECONDS - start)) lane_a_s=$(cat "$logs/lane-a.s") lane_b_s=$(cat "$logs/lane-b.s")
echo "[demo] models trained and scored: $train_s s (lane none + st-nofeat $lane_a_s s, lane st-branch $lane_b_s s)"
# the trained runs are skipped: the post-hoc arms (st-mix-doc, the recipe, last of them), then the
# baselines and results.md (threads are no part of a run's key).  As soon as the recipe's arm is
# scored it is exported and tags the abstract, beside the sweep's baselines.
first=${seeds%% *}
recipe_metrics="$out/st-mix-doc/frac$frac/seed$first/metrics.json"
t=$SECONDS
touch "$logs/sweep.start"
"$pk" -q sweep "$P" --set train.threads=2 "$@" > "$logs/sweep.log" 2>&1 & ps=$!
while kill -0 "$ps" 2>/dev/null && ! [ "$recipe_metrics" -nt "$logs/sweep.start" ]; do sleep 1; done
if ! kill -0 "$ps" 2>/dev/null; then wait "$ps" || { cat "$logs/sweep.log" >&2; exit 1; }; ps=; fi
posthoc_s=$((SECONDS - t))
echo "[demo] the mix and the document pass scored: $posthoc_s s"
t1=$SECONDS
"$pk" -q export "$P" --arm st-mix-doc --seed "$first" --out "$out/recipe" --force "$@" > "$logs/export.log" 2>&1 \
    || { cat "$logs/export.log" >&2; [ -z "$ps" ] || kill "$ps"; exit 1; }
export_s=$((SECONDS - t1))
echo "[demo] the recipe (seed $first) as one folder, $out/recipe: $export_s s"
t1=$SECONDS
"$pk" -q predict "$out/recipe" "$ABSTRACT" --out "$out/abstract.jsonl" --force > "$logs/predict.log" 2>&1 \
    || { cat "$logs/predict.log" >&2; [ -z "$ps" ] || kill "$ps"; exit 1; }
predict_s=$((SECONDS - t1))
echo "[demo] $ABSTRACT tagged by that folder (priorkit predict, loading included): $predict_s s"
[ -z "$ps" ] || wait "$ps" || { cat "$logs/sweep.log" >&2; exit 1; }
sweep_s=$((SECONDS - t))
echo "[demo] the dictionary baselines and results.md: done $sweep_s s after the sweep started"
# the summary: summary.md (printed) and summary.json, with each step's seconds
.venv/bin/python scripts/demo_summary.py "$P" --tagged "$out/abstract.jsonl" --recipe "$out/recipe" \
    --abstract "$ABSTRACT" --timing "training=$train_s" --timing "lane_none_st_nofeat=$lane_a_s" \
    --timing "lane_st_branch=$lane_b_s" --timing "posthoc=$posthoc_s" --timing "export=$export_s" \
    --timing "predict=$predict_s" --timing "sweep=$sweep_s" "$@"
done_s=$((SECONDS - start))
echo "[demo] done in $done_s s (after bootstrap)"
.venv/bin/python -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["seconds"]["after_bootstrap"] = int(sys.argv[2])
open(p, "w").write(json.dumps(d, indent=2) + "\n")' "$out/summary.json" "$done_s"
