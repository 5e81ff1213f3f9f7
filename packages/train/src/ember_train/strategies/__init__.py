"""Learning strategies: where the Learner trains, each an object whose methods the Learner's loop calls.

After Burn's ``burn-train`` learner strategies. A :class:`LearningStrategy` (``SingleDevice``, ``MultiDevice``,
``DistributedDataParallel``, or your own) is a frozen description passed to ``LearnerBuilder.learning_strategy``; for
each ``fit`` it makes a :class:`LearningMethod` (Burn's trait of that name), the object the loop calls to prepare the
loaders and the model, run a training step, reduce gradients and metrics, agree on stopping and hand back the
trained model. Strategies ask the backend what it can do (``Backend.capabilities``, ``Backend.device_mesh``,
``Backend.process_mesh``) and never test its name or import a backend package.

- :class:`SingleDevice` / :class:`SingleDeviceMethod` (``_single.py``): one device of this process, the default;
  its method implements every call and is the base of the others.
- :class:`MultiDevice` / :class:`MultiDeviceMethod` (``_multi.py``): several devices of this process, one compiled
  program over them (``capabilities.spmd_devices``).
- :class:`DistributedDataParallel` (``_ddp.py``) / :class:`DistributedDataParallelMethod` (``_ddp_method.py``): one
  process per device, gradients averaged by collectives, or one compiled program over the processes
  (``capabilities.spmd_processes``).

(Checkpointing strategies, which say what to save after an epoch, are ``ember_train.CheckpointingStrategy``.)
"""

from ._base import LearningMethod, LearningStrategy
from ._ddp import DistributedDataParallel
from ._ddp_method import DistributedDataParallelMethod
from ._multi import MultiDevice, MultiDeviceMethod
from ._single import SingleDevice, SingleDeviceMethod

__all__ = [
    "LearningStrategy",
    "LearningMethod",
    "SingleDevice",
    "SingleDeviceMethod",
    "MultiDevice",
    "MultiDeviceMethod",
    "DistributedDataParallel",
    "DistributedDataParallelMethod",
]
