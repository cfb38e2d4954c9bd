"""One module per multi-class method; :mod:`calibdash.multiclass` finds them by scanning this package."""
