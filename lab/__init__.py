"""This repository's lab notebook: code that writes about the project's own experiments (the
measured tables of README.md and docs/benchmarks.md).  Not installed with priorkit."""
