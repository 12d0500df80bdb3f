"""Built-in combine provider (under construction)."""
