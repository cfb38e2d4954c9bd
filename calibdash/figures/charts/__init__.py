"""One module per chart the pages draw (no method-specific figure: those are in :mod:`calibdash.figures.methods`)."""
