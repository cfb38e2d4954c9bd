"""The commands whose outputs are kept as golden files (issue 27: same answers before and after).

Each case is a name and the command line of ``python -m calibdash``; ``{out}`` stands for a file the command writes
(``fit --out``, ``report --out``) whose text is the case's output, otherwise the output is what the command prints.
``make_golden.py`` writes ``tests/golden/outputs/<name>.txt`` from the code checked out; ``test_golden.py`` runs every
case again and compares: the text between numbers exactly, the numbers to 1e-12 (relative, or absolute near zero), the
room a sum may need when its terms are added in another order. Anything else that changes is a change of answers.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
S = ROOT / "sample_data"
K = S / "multiclass"
OUTPUTS = Path(__file__).resolve().parent / "outputs"

BINARY = str(S / "circles_svm.csv")
DRIFT = str(S / "drift.csv")
CANCER = str(S / "breast_cancer_nb.csv")
K3 = str(K / "animals_3class.csv")
K10 = str(K / "cifar10_lenet5.csv")
LOGITS = str(K / "logits_4class.csv")

BINARY_METHODS = ["platt", "histogram", "isotonic", "bbq", "sbb", "abb", "elite", "mbct", "enir", "beta",
                  "temperature", "venn_abers", "scaling_binning"]
CLASS_METHODS = ["temperature", "vector", "matrix", "dirichlet", "ovr:isotonic", "ovr:bbq", "top_label:histogram",
                 "top_label:platt"]


def _cases() -> dict[str, list[str]]:
    cases: dict[str, list[str]] = {}
    for scheme in ("split", "kfold", "insample"):
        for engine in ("memory", "duckdb"):
            cases[f"evaluate_binary_{scheme}_{engine}"] = [
                "evaluate", BINARY, "--json", "--scheme", scheme, "--engine", engine,
                "--methods", "platt,histogram,isotonic,bbq,beta"]
            cases[f"evaluate_k3_{scheme}_{engine}"] = ["evaluate", K3, "--json", "--scheme", scheme, "--engine", engine]
    cases["evaluate_binary_measures_boot"] = ["evaluate", CANCER, "--json", "--measures", "all", "--boot", "50",
                                              "--methods", "platt,isotonic,elite"]
    cases["evaluate_binary_cells"] = ["evaluate", DRIFT, "--json", "--cells", "always", "--methods",
                                      "platt,histogram,isotonic,bbq"]
    cases["evaluate_binary_all_methods"] = ["evaluate", BINARY, "--json", "--methods", ",".join(BINARY_METHODS)]
    cases["evaluate_k3_boot"] = ["evaluate", K3, "--json", "--boot", "50", "--methods", ",".join(CLASS_METHODS)]
    cases["evaluate_k10"] = ["evaluate", K10, "--json", "--methods",
                             "temperature,vector,matrix,dirichlet,ovr:isotonic,top_label:histogram"]
    cases["evaluate_logits"] = ["evaluate", LOGITS, "--json"]
    cases["evaluate_binary_table"] = ["evaluate", BINARY]
    cases["evaluate_k3_table"] = ["evaluate", K3]
    for engine in ("memory", "duckdb"):
        cases[f"groups_{engine}"] = ["groups", DRIFT, "--by", "segment", "--json", "--boot", "50", "--engine", engine]
        cases[f"drift_{engine}"] = ["drift", DRIFT, "--time", "date", "--period", "month", "--json", "--boot", "50",
                                    "--engine", engine]
    cases["benchmark"] = ["benchmark", BINARY, CANCER, "--json", "--methods", "platt,isotonic,bbq", "--repeats", "1"]
    cases["report_binary"] = ["report", BINARY, "--out", "{out}", "--methods", "platt,isotonic,bbq"]
    cases["report_k3"] = ["report", K3, "--out", "{out}"]
    for method in BINARY_METHODS:
        cases[f"fit_binary_{method}"] = ["fit", BINARY, "--method", method, "--out", "{out}"]
    for method in CLASS_METHODS:
        cases[f"fit_k3_{method.replace(':', '_')}"] = ["fit", K3, "--method", method, "--out", "{out}"]
    return cases


CASES = _cases()

# what differs from one run to the next whatever the code: the file paths of this checkout, times, versions
_VOLATILE = [
    (re.compile(re.escape(str(ROOT))), "<ROOT>"),
    (re.compile(r'"(seconds|elapsed|wall_seconds|fit_seconds|created|saved_at|calibdash_version)"\s*:'
                r'\s*("[^"]*"|[-0-9.eE+]+|null)'), r'"\1": <volatile>'),
    (re.compile(r"(<script[^>]*>)\s*/\*\*\s*\* plotly\.js(?:(?!</script>).)*(</script>)", re.S), r"\1<library>\2"),
    (re.compile(r'(<td class="time">)[^<]*(</td>)'), r"\1<volatile>\2"),
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?( ?UTC|Z|[+-]\d\d:\d\d)?"), "<timestamp>"),
]


def scrub(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def run_case(name: str, tmp: Path) -> str:
    """Run one case in this process and return its scrubbed output text."""
    import contextlib
    import io

    from calibdash.cli import main

    argv = list(CASES[name])
    out_file = tmp / f"{name}.out"
    uses_file = "{out}" in argv
    argv = [str(out_file) if a == "{out}" else a for a in argv]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    text = out_file.read_text(encoding="utf-8") if uses_file else buffer.getvalue()
    return f"exit {status}\n" + scrub(text)
