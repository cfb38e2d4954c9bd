"""Download payloads made on click only (never on every rerun): figure images and fitted models."""
from __future__ import annotations

from calibdash import data as cdata, export
from calibdash.figures import images

__all__ = ["image_maker", "model_json"]


def image_maker(fig, fmt: str):
    """A download callable rendering ``fig`` as ``fmt`` (png or svg)."""
    return lambda: images.figure_bytes(fig, fmt)


def model_json(model, ss: cdata.ScoreSet):
    """A download callable writing the fitted calibrator as calibdash JSON, with where it was fitted."""
    return lambda: export.dumps(model, fitted_on=export.provenance(ss, model)).encode()
