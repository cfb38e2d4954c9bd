"""One module per multi-class method; :func:`calibdash.calibrators.classes` finds them by scanning this package."""
