"""One module per method (or family) drawing a fitted calibrator's inner workings."""
