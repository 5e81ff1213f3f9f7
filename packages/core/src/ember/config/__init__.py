"""Configs (Burn's ``Config`` derive): ``@config`` makes a validated, JSON-serializable frozen dataclass.

>>> from ember.config import config
>>> @config
... class TrainConfig:
...     epochs: int
...     lr: float = 1e-3
>>> TrainConfig(10).with_lr(0.1).to_dict()
{'epochs': 10, 'lr': 0.1}
"""

from __future__ import annotations

from ._config import config, is_config

__all__ = ["config", "is_config"]
