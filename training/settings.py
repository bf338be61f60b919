"""Environment-backed defaults for the training CLI (flags override them)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

from model_store import DEFAULT_STORE_DIR


class TrainSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore")

    data_root: Path = Path("data")  # env DATA_ROOT; holds MNIST/raw/ and FashionMNIST/raw/
    model_store_dir: Path = DEFAULT_STORE_DIR  # env MODEL_STORE_DIR, shared with the app
    runs_dir: Path = Path("runs")  # env RUNS_DIR: training state, metrics, plots


settings = TrainSettings()
