"""Text into units: words, sentences, Markdown tables, boundaries and the context a chunk carries."""
