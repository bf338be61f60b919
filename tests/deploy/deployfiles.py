"""Readers for the deploy files (Dockerfile, .dockerignore, compose files, docs/deploy.md) and helpers
shared by the tests in this folder. Plain functions, no Docker engine: conftest.py puts this folder on
sys.path so the tests can `from deployfiles import ...`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pathspec
import pytest
import yaml
from dockerfile_parse import DockerfileParser

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
COMPOSE_GPU = REPO / "docker-compose.yml"
COMPOSE_CPU = REPO / "docker-compose.cpu.yml"
COMPOSE_FILES = {"gpu": COMPOSE_GPU, "cpu": COMPOSE_CPU}
DEPLOY_DOC = REPO / "docs" / "deploy.md"

# Variables the images may set that are not the app's (or the trainer's) settings.
NON_APP_ENV = {"PATH", "VIRTUAL_ENV", "MPLBACKEND"}
NON_APP_ENV_PREFIXES = ("PYTHON", "PIP_", "NVIDIA_")


def settings_vars(env: dict[str, str]) -> dict[str, str]:
    """The part of an image's ENV meant for the app's settings."""
    return {k: v for k, v in env.items() if k not in NON_APP_ENV and not k.startswith(NON_APP_ENV_PREFIXES)}


# --- Dockerfile -------------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int

    def exec_form(self) -> list[str]:
        assert self.args.lstrip().startswith("["), f"line {self.line}: {self.keyword} is not in exec form"
        return json.loads(self.args)


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        out = {}
        for ins in self.all("ENV"):
            for token in shlex.split(ins.args):
                key, _, value = token.partition("=")
                out[key] = value
        return out


def parse_dockerfile(path: Path) -> list[Stage]:
    """Instructions per stage, as dockerfile-parse reads them (continuations joined, comments dropped)."""
    stages: list[Stage] = []
    for item in DockerfileParser(path=str(path), env_replace=False).structure:
        ins = Instruction(item["instruction"], item["value"].strip(), item["startline"] + 1)
        if ins.keyword == "COMMENT":
            continue
        if ins.keyword == "FROM":
            words = ins.args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name, words[0]))
        elif stages:
            stages[-1].instructions.append(ins)
    return stages


def copy_parts(ins: Instruction) -> tuple[dict[str, str], list[str], str]:
    """COPY/ADD -> (flags, sources, destination)."""
    words = shlex.split(ins.args)
    flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


def healthcheck_argv(ins: Instruction) -> list[str]:
    _options, _, command = ins.args.partition("CMD")
    assert command.strip().startswith("["), "HEALTHCHECK CMD should be in exec form (no shell needed)"
    return json.loads(command)


def health_url(argv: list[str]) -> tuple[int, str]:
    """(port, path) of the http://127.0.0.1:PORT/PATH URL that a healthcheck command polls."""
    found = re.findall(r"http://(?:127\.0\.0\.1|localhost):(\d+)(/[^'\"\s]*)", " ".join(argv))
    assert len(found) == 1, f"expected one local URL in the healthcheck, found {found}: {argv}"
    return int(found[0][0]), found[0][1]


def uvicorn_option(argv: list[str], name: str) -> str | None:
    for i, word in enumerate(argv):
        if word == name:
            return argv[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


# --- the project's own settings -------------------------------------------------------------------


def module_or_skip(name: str):
    """Import a module of the project; skip only while it does not exist yet (import errors fail)."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} does not exist yet")
    return importlib.import_module(name)


def settings_env_names(settings_cls) -> dict[str, object]:
    """Environment variable name -> default, for every field of a pydantic-settings class."""
    prefix = settings_cls.model_config.get("env_prefix", "") or ""
    out = {}
    for name, info in settings_cls.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else None
        default = info.default_factory() if info.default_factory else info.default
        out[(alias or prefix + name).upper()] = default
    return out


def uvicorn_graceful_s() -> float | None:
    """The `timeout_graceful_shutdown=` that ``python -m app`` (app/__main__.py) gives uvicorn, if any."""
    path = REPO / "app" / "__main__.py"
    if not path.is_file():
        return None
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.keyword) and node.arg == "timeout_graceful_shutdown":
            return float(ast.literal_eval(node.value)) if isinstance(node.value, ast.Constant) else None
    return None


def drain_budget_s(app_env: dict[str, object]) -> float:
    """Longest SIGTERM -> exit: with app/supervisor.py, the workers and then the engine, each given
    `shutdown_grace_s + N` (read from its source); before it, uvicorn's graceful window (in-flight
    requests, when app/__main__.py sets one) plus SHUTDOWN_GRACE_S (the app's own drain)."""
    grace = float(app_env["SHUTDOWN_GRACE_S"])
    supervisor = REPO / "app" / "supervisor.py"
    if supervisor.is_file():
        extra = re.findall(r"shutdown_grace_s \+ (\d+(?:\.\d+)?)", supervisor.read_text())
        assert extra, "app/supervisor.py: where does the drain's time limit come from now?"
        return 2 * (grace + float(extra[0]))
    return (uvicorn_graceful_s() or 0.0) + grace


# Settings the app sets for its own child processes: not for operators, not in compose or manifests.
INTERNAL_SETTINGS = {"ENGINE_SOCKET"}


def check_settings_accept(settings_cls, env: dict[str, str], monkeypatch) -> None:
    """The app's Settings validate these values (what the container will be started with)."""
    for name in settings_env_names(settings_cls):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings_cls()


# --- .dockerignore and the image's file layout ----------------------------------------------------


def _dockerignore() -> pathspec.GitIgnoreSpec:
    """.dockerignore as gitignore patterns anchored at the context root. Docker's rules are the same for
    what this file uses: patterns are relative to the root, one that matches a directory covers all
    below it, `!` lets a path back in, and the last pattern that matches decides."""
    lines = []
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            keep = line.startswith("!")
            lines.append(("!" if keep else "") + "/" + line.lstrip("!").strip("/"))
    return pathspec.GitIgnoreSpec.from_lines(lines)


def dockerignored(path: str) -> bool:
    """Whether `docker build .` leaves this path (relative to the repository) out of the context."""
    return _dockerignore().match_file(path.strip("/"))


def materialize(stage: Stage, root: Path) -> Path:
    """Lay out the stage's COPY instructions (the build context, .dockerignore applied) under root.

    Returns the stage's working directory. COPY --from (the venv) is left out: the test's Python has it.
    """
    workdir = root
    for ins in stage.instructions:
        if ins.keyword == "WORKDIR":
            workdir = root / ins.args.lstrip("/")
        if ins.keyword != "COPY":
            continue
        flags, sources, dest = copy_parts(ins)
        if "from" in flags:
            continue
        target = root / dest.lstrip("/") if dest.startswith("/") else workdir / dest
        for source in sources:
            for match in sorted(REPO.glob(source.rstrip("/"))):
                # A directory source copies its contents; file sources go into the destination folder.
                files = sorted(f for f in match.rglob("*") if f.is_file()) if match.is_dir() else [match]
                for f in files:
                    if dockerignored(f.relative_to(REPO).as_posix()):
                        continue
                    out = target / (f.relative_to(match) if match.is_dir() else f.name)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, out)
    return workdir


# --- compose files and docs -------------------------------------------------------------------------

_VAR = re.compile(r"\$\{(\w+)(?::?[-?]([^}]*))?\}|\$(\w+)")


def interpolate(value):
    """Compose's ${VAR:-default} with nothing set in the environment: the defaults."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: m.group(2) or "", value.replace("$$", "\0")).replace("\0", "$")
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    return value


def load_compose(path: Path) -> dict:
    return interpolate(yaml.safe_load(path.read_text()))


def env_of(service: dict) -> dict[str, str | None]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return env


def volumes_of(service: dict) -> dict[str, tuple[str, str]]:
    """container path -> (source, mode) for short-syntax volumes."""
    out = {}
    for vol in service.get("volumes", []):
        source, target, *mode = vol.split(":")
        out[target] = (source, mode[0] if mode else "rw")
    return out


def seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(duration))
    assert parts, duration
    return sum(float(n) * units[u] for n, u in parts)


def gpu_devices(service: dict) -> list[dict]:
    return service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])


def doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DEPLOY_DOC.read_text(), re.S)


# --- external tools ---------------------------------------------------------------------------------


def tool(name: str) -> str | None:
    beside_python = Path(sys.executable).parent / name
    return str(beside_python) if beside_python.is_file() else shutil.which(name)


def clean_env() -> dict[str, str]:
    """The caller's environment without COMPOSE_* and without the variables the compose files read."""
    used = {
        m.group(1) or m.group(3) for path in COMPOSE_FILES.values() for m in _VAR.finditer(path.read_text())
    }
    return {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_") and k not in used}


def compose_commands() -> dict[str, list[str]]:
    """Major version -> a command that runs it: docker-compose (v1 Debian or v2) and `docker compose`."""
    paths = dict.fromkeys([tool("docker-compose"), shutil.which("docker-compose"), "/usr/bin/docker-compose"])
    candidates = [[p] for p in paths]
    if shutil.which("docker"):
        candidates.append([shutil.which("docker"), "compose"])
    found: dict[str, list[str]] = {}
    for cmd in candidates:
        if not cmd[0] or not Path(cmd[0]).is_file():
            continue
        try:
            done = subprocess.run([*cmd, "version", "--short"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = done.stdout.strip().lstrip("v")
        if done.returncode == 0 and version[:1] in ("1", "2"):
            found.setdefault("v" + version[0], cmd)
    return found
