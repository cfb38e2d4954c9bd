"""The K-class methods' names, labels, hyperparameters and papers: :data:`pages.parts.problem.CLASSES`.

Kept under these names while pages/parts/benchmark_classes.py and learn_classes.py import them; pages use the
problem's family (``problem.methods``) instead.
"""
from __future__ import annotations

from pages.parts.problem import CLASSES

__all__ = ["class_method_label", "class_method_menu_label", "class_method_labels", "class_hyperparams",
           "class_paper"]

class_method_label = CLASSES.label
class_method_menu_label = CLASSES.menu_label
class_method_labels = CLASSES.labels
class_hyperparams = CLASSES.hyperparams
class_paper = CLASSES.paper
