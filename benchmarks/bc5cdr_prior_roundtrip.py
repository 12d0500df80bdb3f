"""The BC5CDR concept prior (bc5cdr-mesh.yaml, mesh-bias: within known) of the training
builder vs the one load_model rebuilt from a pipeline's output folder, on CoNLL sentences.

    python benchmarks/bc5cdr_prior_roundtrip.py OUTPUT_DIR INPUT.conll

OUTPUT_DIR is the ``output_dir`` ``priorkit run pipelines/bc5cdr-mesh.yaml --prior mesh-bias``
wrote (docs/inference.md, "Checked on BC5CDR").
"""
import dataclasses
import sys

from transformers import AutoTokenizer

import priorkit
from priorkit.datasets import read_dataset
from priorkit.config import load_config
from priorkit.training.plan import plan_for_run
from priorkit.training.wiring import make_builder

out, conll = sys.argv[1], sys.argv[2]
cfg = load_config("pipelines/bc5cdr-mesh.yaml", [f"output_dir={out}"])
plan = plan_for_run(cfg, "mesh-bias")
model = priorkit.load_model(out)
trained = make_builder(plan.cfg, plan.prior, AutoTokenizer.from_pretrained(str(model.folder)))
loaded = model.builder
sentences = [s.words for s in read_dataset(conll, "conll")]
same = all(trained.build(w).tolist() == loaded.build(w).tolist() for w in sentences)
print(f"within: trained {trained.within}, loaded {loaded.within}; neutral {trained.neutral} / {loaded.neutral}")
print(f"{len(sentences)} sentences, priors bit-identical: {same}")
old_bug = dataclasses.replace(plan.prior, within="all")  # what format-1 folders rebuilt
all_builder = make_builder(plan.cfg, old_bug, loaded.tokenizer)
differs = sum(all_builder.build(w).tolist() != loaded.build(w).tolist() for w in sentences)
print(f"with within: all (the old bug) {differs} of {len(sentences)} priors would differ")
assert same and loaded.within == "known"
