"""This repository's lab notebook: code that writes about the project's own experiments (the
measured tables of README.md, docs/benchmarks.md and docs/archive/).  Not installed with priorkit."""
