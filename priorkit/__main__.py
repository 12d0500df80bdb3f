"""``python -m priorkit``: the same command line as the ``priorkit`` script.

Launchers that start a module rather than a console script need this:
``torchrun --nproc_per_node 2 -m priorkit run pipelines/demo.yaml`` and
``accelerate launch -m priorkit run ...`` (docs/scaling.md).
"""
from .cli import main

if __name__ == "__main__":
    main()
