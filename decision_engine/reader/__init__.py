"""Reading the whole document: windowed encoding once per document, and a bounded cache of the result."""
