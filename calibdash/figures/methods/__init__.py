"""One module per method (or family) drawing a fitted calibrator's inner workings; each declares the explanation classes it
draws with :func:`calibdash.figures.draws`, and :func:`calibdash.figures.inner_figures` finds them by scanning this package."""
