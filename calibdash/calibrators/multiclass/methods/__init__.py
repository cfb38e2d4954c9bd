"""One module per multi-class method; :mod:`calibdash.calibrators.multiclass` finds them by scanning this package."""
