"""priorkit's built-in prior providers, each an ordinary plug-in module.

They are registered through the root distribution's ``priorkit`` entry points
(see pyproject.toml) exactly as a third-party plug-in would be.
"""
