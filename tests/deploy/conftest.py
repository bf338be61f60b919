"""Fixtures for the deploy tests: the parsed Dockerfile, the real app's settings and routes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deployfiles import (  # noqa: E402 - needs the path above
    COMPOSE_FILES,
    DOCKERFILE,
    Stage,
    compose_commands,
    doc_blocks,
    load_compose,
    module_or_skip,
    parse_dockerfile,
    settings_env_names,
)


@pytest.fixture(scope="session")
def stages() -> dict[str, Stage]:
    return {s.name: s for s in parse_dockerfile(DOCKERFILE)}


@pytest.fixture(scope="session")
def runtime(stages) -> Stage:
    """The stage `docker build .` produces: the last one."""
    return list(stages.values())[-1]


@pytest.fixture(scope="session")
def serve_argv(runtime) -> list[str]:
    return runtime.last("CMD").exec_form()


@pytest.fixture(scope="session")
def exposed_ports(runtime) -> tuple[int, int]:
    """The runtime image's EXPOSE: HTTP, then gRPC (the Open Inference Protocol)."""
    ports = [p.split("/")[0] for ins in runtime.all("EXPOSE") for p in ins.args.split()]
    assert len(ports) == 2, f"the runtime image should expose HTTP and gRPC, not {ports}"
    return int(ports[0]), int(ports[1])


@pytest.fixture(scope="session")
def exposed_port(exposed_ports) -> int:
    return exposed_ports[0]


@pytest.fixture(scope="session")
def exposed_grpc_port(exposed_ports) -> int:
    return exposed_ports[1]


@pytest.fixture(scope="session")
def app_settings():
    return module_or_skip("app.settings").Settings


@pytest.fixture(scope="session")
def app_env(app_settings) -> dict[str, object]:
    """Environment variable -> default, for every field of app.settings.Settings."""
    return settings_env_names(app_settings)


@pytest.fixture(scope="session")
def serves_get():
    """Whether the real app (app.main.create_app()) has a GET route, not a static mount, for a path."""
    from starlette.routing import Match, Mount

    app = module_or_skip("app.main").create_app()

    def check(path: str) -> bool:
        scope = {"type": "http", "path": path, "method": "GET", "root_path": "", "headers": []}
        return any(
            not isinstance(route, Mount) and route.matches(scope)[0] == Match.FULL
            for route in app.router.routes
        )

    assert not check("/v2/health/no-such-route"), "route matching is broken: everything matches"
    return check


@pytest.fixture(params=sorted(COMPOSE_FILES))
def compose(request) -> tuple[str, dict]:
    """("gpu" | "cpu", the compose file with its ${VAR:-default}s resolved to the defaults)."""
    return request.param, load_compose(COMPOSE_FILES[request.param])


@pytest.fixture(scope="session")
def composers() -> dict[str, list[str]]:
    return compose_commands()


@pytest.fixture(scope="session")
def scale_example() -> str:
    blocks = [b for b in doc_blocks("yaml") if "docker-compose.scale.yml" in b]
    assert len(blocks) == 1, "docs/deploy.md should show one docker-compose.scale.yml"
    return blocks[0]
