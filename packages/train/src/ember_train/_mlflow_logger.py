"""``MlflowLogger``: metrics, hyper-parameters and the config of a run in MLflow (optional extra
``ember-train[mlflow]``: ``mlflow-skinny``, the client without the server)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from ember.record import atomic_write

from ._errors import LearnerError
from ._tracking import EpochEndSteps, RunInfo, TrackingLogger, flat_hparams

__all__ = ["MlflowLogger"]

#: the file in the artifact directory that names the MLflow run, so that a resumed run logs into it
RUN_FILE = "mlflow-run.json"
_BATCH = 1000  # MLflow's limit of metrics per log_batch call
_BAD_KEY = re.compile(r"[^\w\-. /]")


def _mlflow() -> Any:
    try:
        import mlflow
    except ImportError as exc:
        from ember import install_command

        raise LearnerError(
            f"MlflowLogger needs MLflow's client, which is not installed: {install_command('ember-train', 'mlflow')} "
            "(mlflow-skinny; or pip install mlflow for the UI server too)."
        ) from exc
    return mlflow


def _is_file_store(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri and not uri.startswith(("sqlite:", "databricks"))


class MlflowLogger(TrackingLogger):
    """Logs to an MLflow tracking store: one MLflow run per training run.

    - metrics ``iteration/train/<Metric>`` (step: the global training step) and ``iteration/valid/<Metric>`` (the
      validation's epoch mean at the global training step where the epoch ended: one axis, as Keras and Lightning
      log validation), ``valid_batch/<Metric>`` (each validation batch, step: the validation's own global
      iteration) and ``epoch/<split>/<Metric>`` (step: the epoch), sent with ``log_batch`` at each logging
      interval and epoch end;
    - the hyper-parameters (``LearnerBuilder.with_hyperparameters``) as params with dotted keys
      (``optimizer.beta_1``) and as the artifact ``config.json``;
    - the run ends ``FINISHED``, ``FAILED`` after an error, ``KILLED`` after a second Ctrl-C.

    The run id is kept in ``<artifact_dir>/mlflow-run.json``: a resumed run (``LearnerBuilder.checkpoint``) logs
    into the same MLflow run. MLflow cannot delete logged points: after a crash (not a Ctrl-C, which checkpoints
    exactly where logging stopped) the points the crashed run logged after its checkpoint stay beside the new ones.

    Args:
        tracking_uri: where the runs go (``mlflow.set_tracking_uri``'s forms: ``file:/path``, ``sqlite:///x.db``,
            ``http://host:5000``). Default: MLflow's local file store ``file:<artifact_dir>/mlruns``, which works
            offline (``mlflow ui --backend-store-uri <artifact_dir>/mlruns`` shows it). MLflow 3 keeps that store in
            maintenance mode and refuses it unless ``MLFLOW_ALLOW_FILE_STORE=true``: for a ``file:`` URI the logger
            sets that variable when it is unset.
        experiment_name: the MLflow experiment (created when missing; default ``"ember"``).
        run_name: the run's name (default: MLflow's generated one).
        tags: extra run tags.

    Raises:
        LearnerError: (at the start of ``fit``) MLflow is not installed, or the store cannot be opened (the
            message names the URI and MLflow's error).
    """

    def __init__(self, tracking_uri: str | None = None, experiment_name: str = "ember", run_name: str | None = None,
                 tags: dict[str, str] | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.run_name = run_name
        self.tags = dict(tags or {})
        self.run_id: str | None = None
        self._client: Any = None
        self._pending: list[Any] = []
        self._metric: Any = None
        self._ends = EpochEndSteps()

    def start(self, run: RunInfo) -> None:
        mlflow = _mlflow()
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        self._metric = Metric
        self._ends.start(run)
        uri = self.tracking_uri or (run.artifact_dir.resolve() / "mlruns").as_uri()
        self.tracking_uri = uri
        if _is_file_store(uri):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        try:
            client = MlflowClient(tracking_uri=uri)
            exp = client.get_experiment_by_name(self.experiment_name)
            exp_id = exp.experiment_id if exp is not None else client.create_experiment(self.experiment_name)
            run_id = self._resumable(client, run) if run.resume is not None else None
            if run_id is None:
                tags = {"ember.artifact_dir": str(run.artifact_dir.resolve()), **self.tags}
                run_id = client.create_run(exp_id, run_name=self.run_name, tags=tags).info.run_id
                params = [Param(k, str(v)[:6000]) for k, v in flat_hparams(run.hparams).items()]
                for i in range(0, len(params), 100):
                    client.log_batch(run_id, params=params[i:i + 100])
                if run.hparams:
                    client.log_text(run_id, json.dumps(run.hparams, indent=2), "config.json")
            else:
                client.update_run(run_id, status="RUNNING")
        except mlflow.exceptions.MlflowException as exc:
            raise LearnerError(f"MlflowLogger: cannot log to the MLflow store {uri}: {exc}") from exc
        self._client = client
        self.run_id = run_id
        text = json.dumps({"tracking_uri": uri, "run_id": run_id}).encode()
        atomic_write(run.artifact_dir / RUN_FILE, lambda f: f.write(text))

    def _resumable(self, client: Any, run: RunInfo) -> str | None:
        """The run id of ``mlflow-run.json`` when it names a run of this store, else ``None``."""
        path = Path(run.artifact_dir) / RUN_FILE
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("tracking_uri") != self.tracking_uri:
                return None
            return str(client.get_run(saved["run_id"]).info.run_id)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        except Exception:  # noqa: BLE001 - MlflowException: the run was deleted
            return None

    def _add(self, key: str, value: float, step: int) -> None:
        self._pending.append(self._metric(_BAD_KEY.sub("_", key), float(value), int(time.time() * 1000), step))

    def log_iteration(self, split: str, name: str, value: float, epoch: int, iteration: int, step: int) -> None:
        if split == "train":
            self._add(f"iteration/{split}/{name}", value, step)
            self._ends.train(step, epoch)
        else:
            self._add(f"valid_batch/{name}", value, step)

    def log_epoch(self, split: str, name: str, value: float, epoch: int) -> None:
        self._add(f"epoch/{split}/{name}", value, epoch)
        if split == "valid":
            self._add(f"iteration/{split}/{name}", value, self._ends.at(epoch))

    def flush(self) -> None:
        if self._client is None or not self._pending:
            return
        pending, self._pending = self._pending, []
        for i in range(0, len(pending), _BATCH):
            self._client.log_batch(self.run_id, metrics=pending[i:i + _BATCH])

    def close(self) -> None:
        if self._client is None:
            return
        exc = sys.exc_info()[1]
        try:
            self.flush()
        finally:
            status = "FINISHED" if exc is None else "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            self._client.set_terminated(self.run_id, status)
            self._client = None

    def __repr__(self) -> str:
        return f"MlflowLogger({self.tracking_uri!r}, experiment_name={self.experiment_name!r})"
