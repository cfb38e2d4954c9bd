"""One module per chart the pages draw."""
