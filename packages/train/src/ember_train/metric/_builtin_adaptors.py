"""Adaptors from the built-in outputs to the built-in metric inputs (Burn's ``Adaptor`` impls)."""

from __future__ import annotations

from ember.tensor import activation

from .._adaptor import register_adaptor
from .._outputs import ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput
from ._inputs import (
    AccuracyInput,
    AurocInput,
    ConfusionStatsInput,
    HammingScoreInput,
    LossInput,
    TopKAccuracyInput,
)

__all__: list[str] = []


def _loss(out: ClassificationOutput | RegressionOutput | MultiLabelClassificationOutput) -> LossInput:
    return LossInput(out.loss, int(out.targets.shape[0]))


for _out in (ClassificationOutput, RegressionOutput, MultiLabelClassificationOutput):
    register_adaptor(_out, LossInput, _loss)

register_adaptor(ClassificationOutput, AccuracyInput, lambda o: AccuracyInput(o.output, o.targets))
register_adaptor(ClassificationOutput, TopKAccuracyInput, lambda o: TopKAccuracyInput(o.output, o.targets))
register_adaptor(
    ClassificationOutput, ConfusionStatsInput,
    lambda o: ConfusionStatsInput(o.output, o.targets.reshape([-1]).one_hot(int(o.output.shape[1])).bool()),
)
# AUROC ranks the positive-class probability (softmax), not a raw logit.
register_adaptor(
    ClassificationOutput, AurocInput, lambda o: AurocInput(activation.softmax(o.output, 1), o.targets)
)
register_adaptor(
    MultiLabelClassificationOutput, HammingScoreInput, lambda o: HammingScoreInput(o.output, o.targets)
)
register_adaptor(
    MultiLabelClassificationOutput, ConfusionStatsInput,
    lambda o: ConfusionStatsInput(activation.sigmoid(o.output), o.targets.bool()),
)
