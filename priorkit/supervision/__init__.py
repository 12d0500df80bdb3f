"""Supervision from knowledge: how far to trust a dictionary (:mod:`.calibration`) and silver
labels from it or from a trained teacher (:mod:`.silver`).  Plain data in, plain data out: the
pipeline's stages (``priorkit/training/*_stage.py``, ``self_training.py``) drive them."""
