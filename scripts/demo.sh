#!/usr/bin/env bash
# The main job on an embedded default: MiniLM + WordNet prior on a slice of STS-B,
# no prior vs the paper's prior, 2 seeds; prints the table (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -f pipelines/demo.yaml ] && .venv/bin/priorkit run --help >/dev/null 2>&1; then
    exec .venv/bin/priorkit sweep pipelines/demo.yaml "$@"
fi
.venv/bin/priorkit show "A man is playing a guitar." "A woman plays the guitar." --out out/demo-prior.png
