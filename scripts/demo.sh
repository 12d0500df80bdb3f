#!/usr/bin/env bash
# The main job on an embedded default: the MiniLM fine-tuned on a slice of STS-B
# with and without the paper's WordNet prior, 2 seeds; prints the table and writes
# runs/demo/{results.csv,results.md,*.png}.  Extra arguments go to `priorkit sweep`
# (e.g. --set sweep.seeds=[0]).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/priorkit sweep pipelines/demo.yaml "$@"
