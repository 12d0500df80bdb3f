"""Built-in embedding provider (under construction)."""
