"""Built-in conceptnet provider (under construction)."""
