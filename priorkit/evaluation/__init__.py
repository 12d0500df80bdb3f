"""Judging trained settings: sweeps (:mod:`.sweep`), paired comparisons and curves
(:mod:`.curve`), verdicts (:mod:`.verdict`), selection files (:mod:`.selection`), the post-hoc arms
(:mod:`.posthoc`) and the dictionary's reports (:mod:`.dictionary_report`,
:mod:`.dictionary_recall`, :mod:`.dictionary_baseline`)."""
