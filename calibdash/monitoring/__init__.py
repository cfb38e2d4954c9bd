"""Calibration over groups and time: groups, periods, keyed cells, staleness, drift."""
