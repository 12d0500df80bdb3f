"""Built-in ontology provider (under construction)."""
