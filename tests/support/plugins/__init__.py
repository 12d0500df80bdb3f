"""Plug-in files for tests: this folder is passed as PRIORKIT_PLUGINS_DIR (files starting with _ are skipped)."""
