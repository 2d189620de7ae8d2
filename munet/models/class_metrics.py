"""Per-class evaluation of a classifier: the confusion matrix, per-class accuracy, top-5.

One pass over a split fills a `ConfusionCounter`; its `ClassMetrics` is plain data (JSON
round-trip) that `munet test`, the export's model card and the report show. Rows of the
confusion matrix are true classes, columns predicted ones (scikit-learn's convention).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# Top-5 accuracy is reported where it says something: for more than this many classes.
TOP_K = 5


@dataclass(frozen=True)
class ClassMetrics:
    """What a classifier did on one split, per class.

    Attributes:
        confusion: confusion[true][predicted] = examples (C x C).
        class_names: one name per class, or None.
        top5_correct: examples whose label is among the 5 highest logits; None where the
            task has 5 classes or fewer (it would be 1.0).
    """

    confusion: tuple[tuple[int, ...], ...]
    class_names: tuple[str, ...] | None = None
    top5_correct: int | None = None

    @property
    def num_classes(self) -> int:
        return len(self.confusion)

    @property
    def num_examples(self) -> int:
        return sum(sum(row) for row in self.confusion)

    @property
    def correct(self) -> int:
        return sum(self.confusion[i][i] for i in range(self.num_classes))

    @property
    def accuracy(self) -> float:
        """Top-1 accuracy, exactly `correct / examples` (the immutability test's number)."""
        return self.correct / self.num_examples if self.num_examples else float("nan")

    @property
    def top5_accuracy(self) -> float | None:
        if self.top5_correct is None or not self.num_examples:
            return None
        return self.top5_correct / self.num_examples

    @property
    def support(self) -> list[int]:
        """Examples per true class."""
        return [sum(row) for row in self.confusion]

    @property
    def per_class_accuracy(self) -> list[float | None]:
        """Recall per class: correct / examples of that class (None: no examples)."""
        return [
            row[i] / total if total else None
            for i, (row, total) in enumerate(zip(self.confusion, self.support, strict=True))
        ]

    def name(self, index: int) -> str:
        """Class `index`'s name, or its number as text."""
        return self.class_names[index] if self.class_names else str(index)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the inputs, and the derived numbers for readers of the JSON."""
        return {
            "class_names": list(self.class_names) if self.class_names else None,
            "num_examples": self.num_examples,
            "accuracy": self.accuracy,
            "top5_accuracy": self.top5_accuracy,
            "top5_correct": self.top5_correct,
            "per_class": [
                {
                    "class": self.name(i),
                    "index": i,
                    "examples": n,
                    "correct": self.confusion[i][i],
                    "accuracy": acc,
                }
                for i, (n, acc) in enumerate(
                    zip(self.support, self.per_class_accuracy, strict=True)
                )
            ],  # fmt: skip
            "confusion": [list(row) for row in self.confusion],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClassMetrics:
        """Inverse of `to_dict` (derived numbers are recomputed).

        Raises:
            ValueError: a confusion matrix that is not square, or names of another count.
        """
        confusion = tuple(tuple(int(v) for v in row) for row in data["confusion"])
        if any(len(row) != len(confusion) for row in confusion):
            raise ValueError(f"confusion matrix of {len(confusion)} rows is not square")
        names = data.get("class_names")
        if names is not None and len(names) != len(confusion):
            raise ValueError(f"{len(names)} class names for {len(confusion)} classes")
        top5 = data.get("top5_correct")
        return cls(confusion, tuple(names) if names else None, None if top5 is None else int(top5))


class ConfusionCounter:
    """Accumulates a confusion matrix (and top-5 hits) batch by batch.

    Args:
        num_classes: C.
        class_names: one name per class, or None.

    Raises:
        ValueError: names of another count than `num_classes`.
    """

    def __init__(self, num_classes: int, class_names: Sequence[str] | None = None) -> None:
        if class_names is not None and len(class_names) != num_classes:
            raise ValueError(f"{len(class_names)} class names for {num_classes} classes")
        self.num_classes = num_classes
        self.class_names = tuple(class_names) if class_names else None
        self._counts = torch.zeros(num_classes * num_classes, dtype=torch.int64)
        self._top5 = 0

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """Adds a batch: logits (B, C), integer labels (B,).

        Raises:
            ValueError: logits of another class count, or labels outside [0, C).
        """
        if logits.shape[-1] != self.num_classes:
            raise ValueError(f"logits of {logits.shape[-1]} classes, expected {self.num_classes}")
        labels = labels.to("cpu", torch.int64)
        if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= self.num_classes):
            raise ValueError(f"labels outside [0, {self.num_classes}): {labels.tolist()[:8]}")
        logits = logits.detach().to("cpu")
        predicted = logits.argmax(dim=-1)
        self._counts += torch.bincount(
            labels * self.num_classes + predicted, minlength=self.num_classes**2
        )
        if self.num_classes > TOP_K:
            top = logits.topk(TOP_K, dim=-1).indices
            self._top5 += int((top == labels[:, None]).any(dim=-1).sum())

    def result(self) -> ClassMetrics:
        matrix = self._counts.view(self.num_classes, self.num_classes).tolist()
        return ClassMetrics(
            tuple(tuple(row) for row in matrix),
            self.class_names,
            self._top5 if self.num_classes > TOP_K else None,
        )


# Text -----------------------------------------------------------------------------------------
# The confusion matrix is printed for up to this many classes (beyond, it is in the JSON).
MAX_MATRIX_CLASSES = 20


def _aligned(rows: Sequence[Sequence[str]], right_from: int = 1) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(w) if i >= right_from else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def class_table(metrics: ClassMetrics) -> str:
    """Per-class accuracy as aligned text, then the confusion matrix (up to 20 classes)."""
    rows = [["class", "examples", "correct", "accuracy"]]
    for i, (n, acc) in enumerate(zip(metrics.support, metrics.per_class_accuracy, strict=True)):
        shown = "-" if acc is None else f"{acc:.4f}"
        rows.append([metrics.name(i), str(n), str(metrics.confusion[i][i]), shown])
    lines = _aligned(rows)
    if metrics.num_classes > MAX_MATRIX_CLASSES:
        lines.append(
            f"confusion matrix: {metrics.num_classes} classes, in --format json (up to "
            f"{MAX_MATRIX_CLASSES} are printed)"
        )
        return "\n".join(lines)
    lines.append("confusion matrix (rows: true class, columns: predicted class)")
    header = ["true \\ predicted"] + [metrics.name(i) for i in range(metrics.num_classes)]
    matrix = [header] + [
        [metrics.name(i)] + [str(v) for v in row] for i, row in enumerate(metrics.confusion)
    ]
    lines += _aligned(matrix)
    return "\n".join(lines)


def class_markdown(metrics: ClassMetrics) -> str:
    """Per-class accuracy and the confusion matrix (up to 20 classes) as Markdown tables."""
    lines = ["| class | examples | correct | accuracy |", "|---|---:|---:|---:|"]
    for i, (n, acc) in enumerate(zip(metrics.support, metrics.per_class_accuracy, strict=True)):
        shown = "-" if acc is None else f"{acc:.4f}"
        lines.append(f"| {_md(metrics.name(i))} | {n} | {metrics.confusion[i][i]} | {shown} |")
    lines.append("")
    if metrics.num_classes > MAX_MATRIX_CLASSES:
        lines.append(
            f"The confusion matrix ({metrics.num_classes} classes) is in config.json "
            "(`class_metrics.confusion`)."
        )
        return "\n".join(lines)
    lines += [
        "Confusion matrix (rows: true class, columns: predicted class):",
        "",
        "| true \\ predicted | " + " | ".join(_md(metrics.name(i)) for i in
                                            range(metrics.num_classes)) + " |",
        "|---|" + "---:|" * metrics.num_classes,
    ]  # fmt: skip
    for i, row in enumerate(metrics.confusion):
        lines.append(f"| {_md(metrics.name(i))} | " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|")
