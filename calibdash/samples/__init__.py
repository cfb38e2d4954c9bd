"""The sample data sets the dashboard opens without an upload (see sample_data/README.md).

>>> from calibdash.samples import SAMPLES, load_sample
>>> ss = load_sample("circles_svm", score="linear_svm")     # doctest: +SKIP

Nothing is downloaded, ever. In a checkout of the repository the files are ``sample_data/`` next to the package
(:data:`SAMPLE_DIR`). An installed copy ships no CSV: the package's deterministic generators
(:mod:`calibdash.samples.make`) write each binary sample once, on first use, into a per-user cache folder
(:func:`cache_dir`); the largest, ``ctr_120k.csv`` (3.9 MB), takes well under a second. On the pinned library
versions both sources hold the same values (``tests/samples/test_samples.py``).
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..data import ClassSet, ScoreSet, load_classes, load_scores
from ..core.errors import EnvironmentProblem, SettingsError

__all__ = ["SAMPLES", "DEFAULT_SAMPLE", "SAMPLE_DIR", "sample_path", "CLASS_SAMPLES"]


_REPO_SAMPLES = Path(__file__).resolve().parent.parent.parent / "sample_data"
#: ``sample_data/`` at the repository root when calibdash runs from a checkout; None when installed.
SAMPLE_DIR: Path | None = _REPO_SAMPLES if (_REPO_SAMPLES / "make_samples.py").is_file() else None


@dataclass(frozen=True)
class SampleFile:
    """What every sample data set declares: its key in :data:`SAMPLES` or :data:`CLASS_SAMPLES`, its file name in
    ``sample_data/`` (or, for a binary sample, the cache folder), a short display title, a description (origin
    and what it shows) and the label column."""

    name: str
    filename: str
    title: str
    description: str
    label: str


@dataclass(frozen=True)
class Sample(SampleFile):
    """One binary sample data set: a :class:`SampleFile` with its default active score column ``score``."""

    score: str = ""


SAMPLES: dict[str, Sample] = {s.name: s for s in (
    Sample(
        "circles_svm", "circles_svm.csv", "Circles, linear vs quadratic SVM (BBQ / SBB papers)",
        ("The BBQ and SBB papers' simulated circular configuration: class 0 inside radius 2, class 1 between radius 2 "
         "and 4; 1,000 train + 1,000 test points. Scores are the sigmoid of the margin of a linear and a quadratic "
         "SVM. The linear SVM's true probability is not monotone in its score, so Platt scaling and isotonic "
         "regression fail where binning helps; the quadratic SVM is accurate but miscalibrated."),
        label="label", score="linear_svm"),
    Sample(
        "breast_cancer_nb", "breast_cancer_nb.csv", "Breast cancer, Gaussian naive Bayes",
        ("scikit-learn's Wisconsin breast cancer data (569 tumours) scored by Gaussian naive Bayes with 5-fold "
         "out-of-fold predictions. Naive Bayes is famously over-confident: most scores sit at 0 or 1."),
        label="malignant", score="nb_score"),
    Sample(
        "ctr_120k", "ctr_120k.csv", "Click-through, 120k impressions (synthetic)",
        ("Synthetic ad impressions with device, site category, hour, banner position and user age. The base model's "
         "pCTR is miscalibrated per site category and device: at the same score some groups click more, others less "
         "than predicted, which only a feature-aware calibrator (MBCT) can correct."),
        label="click", score="pctr"),
    Sample(
        "drift", "drift.csv", "Drifting score with one miscalibrated segment (synthetic)",
        ("20,000 scored rows over the twelve months of 2025 in four segments. In January the score is calibrated "
         "except in the 'partner' segment, which it over-estimates at every date; month by month the true log-odds "
         "fall behind the score's, so a calibrator fitted early goes stale. Made for the Groups & time page."),
        label="label", score="score"),
)}


@dataclass(frozen=True)
class ClassSample(SampleFile):
    """One multi-class sample data set: a :class:`SampleFile` with its class columns' ``prefix`` and whether they
    hold ``logits``. Kept apart from :data:`SAMPLES` (which the command line and the Benchmark page iterate over);
    the files, in ``sample_data/multiclass/``, are not generated: an installed calibdash has none."""

    prefix: str = "p_"
    logits: bool = False


CLASS_SAMPLES: dict[str, ClassSample] = {s.name: s for s in (
    ClassSample(
        "animals_3class", "multiclass/animals_3class.csv",
        "Three animals, an over-confident model (K = 3, synthetic)",
        ("3,000 rows of three Gaussian classes (cat, dog, emu) whose model reports the true logits times 2.5 plus a "
         "class bias: over-confident (accuracy 0.842, confidence ECE 0.093). Temperature scaling nearly removes it, "
         "vector scaling exactly in the limit; the simplex map shows the calibrators' maps."),
        label="label", prefix="p_"),
    ClassSample(
        "cifar10_lenet5", "multiclass/cifar10_lenet5.csv", "CIFAR-10, LeNet-5 (K = 10)",
        ("The softmax outputs of a LeNet-5 network on the 10,000 CIFAR-10 test images (netcal's record): a weak, "
         "over-confident network, accuracy 0.5308, confidence ECE 0.10789 (15 equal-width bins)."),
        label="label", prefix="p_"),
    ClassSample(
        "logits_4class", "multiclass/logits_4class.csv", "Four classes given as logits (K = 4, synthetic)",
        ("400 rows of four Gaussian classes whose model's logits (the true ones times 2 plus a class bias) are "
         "written as they are: the class columns are softmaxed into probabilities (accuracy 0.838, confidence ECE "
         "0.093)."),
        label="label", prefix="logit_", logits=True),
)}

#: Sample shown when the dashboard opens.
DEFAULT_SAMPLE = "circles_svm"

_LOCK = threading.Lock()


def _get(name: str) -> Sample | ClassSample:
    if (found := SAMPLES.get(name) or CLASS_SAMPLES.get(name)) is not None:
        return found
    raise SettingsError(f"unknown sample {name!r}; available: {', '.join([*SAMPLES, *CLASS_SAMPLES])}.")


def _user_cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):                       # the XDG spec ignores a relative value
        return Path(xdg)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    return Path.home() / ".cache"


def cache_dir() -> Path:
    """Per-user folder of the generated samples (not created here): ``$XDG_CACHE_HOME/calibdash/samples/<hash>/``,
    ``XDG_CACHE_HOME`` defaulting to ``~/.cache`` (``%LOCALAPPDATA%`` on Windows), ``<hash>`` of the generators'
    source, so a calibdash whose generators differ never reads stale files."""
    try:
        source = b"".join(Path(__file__).with_name(name).read_bytes() for name in ("make.py", "drifting_score.py"))
    except OSError:                              # installed without sources: fall back on the version
        from ..core import __version__
        source = __version__.encode()
    return _user_cache_root() / "calibdash" / "samples" / hashlib.sha256(source).hexdigest()[:12]


def sample_path(name: str) -> Path:
    """Path of sample ``name``'s CSV: the repository's ``sample_data/`` file when there is one, else the file in
    :func:`cache_dir`, generated on first use (a multi-class sample is never generated).

    SettingsError for an unknown sample; EnvironmentProblem when the file has to be generated and the cache
    folder cannot be written, or a multi-class sample's file is not there (an installed calibdash ships none).
    """
    sample = _get(name)
    if SAMPLE_DIR is not None and (SAMPLE_DIR / sample.filename).is_file():
        return SAMPLE_DIR / sample.filename
    if isinstance(sample, ClassSample):
        raise EnvironmentProblem(f"the multi-class sample {name} ({sample.filename}) comes with a checkout of "
                                 "the calibdash repository, in sample_data/; this copy has none.")
    folder = cache_dir()
    path = folder / sample.filename
    if path.is_file():
        return path
    from . import make

    with _LOCK:                                  # one generation per process (the dashboard's threads)
        if not path.is_file():
            try:
                make.write(sample.filename, folder)
            except OSError as exc:
                raise EnvironmentProblem(
                    f"cannot write sample {sample.filename} into the cache folder {folder}: "
                    f"{exc.strerror or exc}. Point XDG_CACHE_HOME to a writable folder.") from None
    return path


def load_sample(name: str, score: str | None = None) -> ScoreSet:
    """Load sample ``name`` (a key of :data:`SAMPLES`) as a :class:`~calibdash.data.ScoreSet`, with ``score`` as
    the active score column (default: the sample's ``score``); errors as :func:`sample_path`."""
    sample = _get(name)
    return load_scores(sample_path(name), score=score or sample.score, label=sample.label)


def load_class_sample(name: str) -> ClassSet:
    """Load multi-class sample ``name`` (a key of :data:`CLASS_SAMPLES`) as a :class:`~calibdash.data.ClassSet`,
    with the label and class columns it declares; SettingsError for another name, else errors as
    :func:`sample_path`."""
    if name not in CLASS_SAMPLES:
        raise SettingsError(f"unknown multi-class sample {name!r}; available: {', '.join(CLASS_SAMPLES)}.")
    s = CLASS_SAMPLES[name]
    given = {"logits" if s.logits else "probs": s.prefix}
    return load_classes(sample_path(name), label=s.label, **given)
