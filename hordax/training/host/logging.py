"""Metric loggers. The default writes local files only (``metrics.jsonl``, done by the
run loop); ``wandb`` logs to Weights & Biases, offline by default (no network needed)."""

from __future__ import annotations

import dataclasses
from typing import Any


class FileLogger:
    """The default: nothing beyond the run directory's own files."""

    def log(self, row: dict[str, Any], step: int) -> None:
        pass

    def finish(self, summary: dict[str, Any]) -> None:
        pass


class WandbLogger:
    """Weights & Biases logger; ``mode='offline'`` writes under ``run_dir/wandb``. With
    ``run_id`` (the checkpoints' run id) the W&B run has that id, so a resumed run goes on
    logging to the run it continues (``resume="allow"``)."""

    def __init__(
        self, project: str, mode: str, run_dir: str | None, config: Any, run_id: str | None = None
    ):
        import wandb

        self._wandb = wandb
        cfg = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)
        self._run = wandb.init(
            project=project,
            mode=mode,
            dir=run_dir,
            config=cfg,
            **({"id": run_id, "resume": "allow"} if run_id else {}),
            settings=wandb.Settings(silent=True),
        )

    def log(self, row: dict[str, Any], step: int) -> None:
        self._run.log(row, step=step)

    def finish(self, summary: dict[str, Any]) -> None:
        for k, v in summary.items():
            if isinstance(v, int | float | str):
                self._run.summary[k] = v
        self._run.finish()


def make_logger(
    cfg: Any, run_dir: str | None, config: Any, run_id: str | None = None
) -> FileLogger | WandbLogger:
    if cfg.name == "wandb":
        return WandbLogger(cfg.project, cfg.mode, run_dir, config, run_id)
    return FileLogger()
