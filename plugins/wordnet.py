"""Built-in wordnet provider (under construction)."""
