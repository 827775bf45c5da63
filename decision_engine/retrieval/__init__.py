"""Long documents: split into spans, score spans against questions, build one shared context."""
