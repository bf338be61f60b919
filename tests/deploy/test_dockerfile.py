"""The Dockerfile serves the real app: command, port, healthcheck route, settings, layers, user."""

from __future__ import annotations

import tomllib

import pytest
from deployfiles import (
    REPO,
    check_settings_accept,
    copy_parts,
    dockerignored,
    health_url,
    healthcheck_argv,
    module_or_skip,
    settings_env_names,
    settings_vars,
    uvicorn_graceful_s,
)


def test_default_target_is_the_runtime_image(stages, runtime):
    assert runtime.name == "runtime", "the last stage is what `docker build .` gives: make it the API image"
    assert "train" in stages, "docker-compose.yml builds `--target train` for the train service"


def test_cmd_is_the_apps_entry_point(serve_argv):
    assert serve_argv == ["python", "-m", "app"], "the service starts the way `python -m app` does"
    main = module_or_skip("app.__main__")
    assert callable(getattr(main, "main", None)), "app/__main__.py runs main()"


def test_served_host_and_ports_match_expose(runtime, app_env, exposed_port, exposed_grpc_port):
    """HOST, PORT and GRPC_PORT are settings: the image's ENV, else Settings' defaults, must serve EXPOSE."""
    env = runtime.env()
    assert env.get("HOST", app_env["HOST"]) == "0.0.0.0", "listen on every interface of the container"
    assert int(env.get("PORT", app_env["PORT"])) == exposed_port, "served port and EXPOSE disagree"
    assert int(env.get("GRPC_PORT", app_env["GRPC_PORT"])) == exposed_grpc_port, (
        "gRPC port and EXPOSE disagree"
    )


def test_cmd_app_object_exists():
    main = module_or_skip("app.main")
    assert hasattr(main, "app"), "uvicorn app.main:app needs a module-level `app`"
    assert callable(getattr(main, "create_app", None)), "app.main.create_app() builds the app"


def test_healthcheck_polls_a_real_route_on_the_served_port(runtime, exposed_port, serves_get):
    port, path = health_url(healthcheck_argv(runtime.last("HEALTHCHECK")))
    assert port == exposed_port
    assert path in ("/v2/health/ready", "/v2/health/live"), "docs/api-contract.md health routes"
    assert serves_get(path), f"{path} is not a GET route of app.main.create_app()"
    assert serves_get("/v2/health/live")


def test_healthcheck_needs_no_curl(runtime):
    argv = healthcheck_argv(runtime.last("HEALTHCHECK"))
    assert argv[0] == "python", argv
    assert "curl" not in argv and "wget" not in argv


def test_image_runs_as_non_root(stages):
    for name in ("runtime", "train"):
        user = stages[name].last("USER")
        assert user is not None, f"stage {name} runs as root"
        uid = user.args.split(":")[0]
        assert uid not in ("root", "0"), f"stage {name} runs as root"
        assert uid.isdigit(), "numeric uid: Kubernetes runAsNonRoot can verify it"


def test_stopsignal_and_graceful_shutdown_fit_the_settings(runtime, app_env):
    assert runtime.last("STOPSIGNAL").args == "SIGTERM"
    graceful = uvicorn_graceful_s()
    if graceful is not None:
        assert graceful >= float(app_env["REQUEST_TIMEOUT_S"]), (
            "uvicorn should let a request run to its REQUEST_TIMEOUT_S deadline before cutting it"
        )


def test_runtime_env_names_are_real_settings(runtime, app_settings, app_env, monkeypatch):
    env = runtime.env()
    app_vars = settings_vars(env)
    unknown = set(app_vars) - set(app_env)
    assert not unknown, f"ENV sets {sorted(unknown)}, which app.settings.Settings does not read"
    assert app_vars.get("MODEL_STORE_DIR") == "/models"
    check_settings_accept(app_settings, app_vars, monkeypatch)


def test_train_env_names_are_real_training_settings(stages):
    train_settings = module_or_skip("training.settings").TrainSettings
    names = settings_env_names(train_settings)
    env = stages["train"].env()
    app_vars = set(settings_vars(env))
    assert app_vars <= set(names), f"unknown to TrainSettings: {sorted(app_vars - set(names))}"
    entrypoint = stages["train"].last("ENTRYPOINT").exec_form()
    assert entrypoint == ["python", "-m", "training"]


def test_shipped_checkpoints_are_the_default_store(stages, runtime):
    store = runtime.env()["MODEL_STORE_DIR"]
    for stage in (runtime, stages["train"]):
        dests = {
            copy_parts(ins)[2].rstrip("/")
            for ins in stage.all("COPY")
            if "model_store/checkpoints" in ins.args
        }
        assert dests == {store}, f"stage {stage.name}: shipped checkpoints should land in {store}"


def test_dependencies_are_cached_apart_from_code(stages):
    code_dirs = ("app", "model_store", "training")
    for name in ("deps", "train-deps"):
        for ins in stages[name].all("COPY"):
            _, sources, _ = copy_parts(ins)
            assert sources == ["pyproject.toml"], f"{name}: {ins.args} would bust the dependency cache"
    deps = stages["deps"].instructions
    copy_at = next(i for i, ins in enumerate(deps) if ins.keyword == "COPY")
    installs = [i for i, ins in enumerate(deps) if ins.keyword == "RUN" and "pip install" in ins.args]
    assert installs and copy_at > installs[0], "install torch before copying pyproject.toml (its own layer)"
    assert any(i > copy_at for i in installs), "install pyproject's dependencies after copying it"
    for name in ("runtime", "train"):
        for ins in stages[name].all("COPY"):
            flags, sources, _ = copy_parts(ins)
            if "from" in flags:
                assert flags["from"] in stages and sources == ["/opt/venv"], ins.args
            else:
                assert all(s.split("/")[0] in code_dirs for s in sources), f"{name}: {ins.args}"


def test_final_images_have_no_build_tools_or_tests(stages):
    for name in ("runtime", "train"):
        for ins in stages[name].instructions:
            text = ins.args.lower()
            assert "tests" not in text, f"{name} line {ins.line}: tests do not belong in the image"
            for tool in ("apt-get", "gcc", "build-essential", "pip install", "pytest", "ruff"):
                assert tool not in text, f"{name} line {ins.line}: `{tool}` belongs in a builder stage"


def test_torch_pins_satisfy_pyproject(stages):
    from packaging.requirements import Requirement
    from packaging.version import Version

    args = {}
    for ins in stages["deps"].all("ARG"):
        key, _, value = ins.args.partition("=")
        args[key] = value
    assert args.get("TORCH_VARIANT") == "cuda", "the default image is the GPU one"
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = {Requirement(d).name: Requirement(d) for d in deps}
    torch_v, vision_v = Version(args["TORCH_VERSION"]), Version(args["TORCHVISION_VERSION"])
    assert torch_v in reqs["torch"].specifier
    assert vision_v in reqs["torchvision"].specifier
    # torchvision 0.N pairs with torch 2.(N-15): 0.19 <-> 2.4, 0.29 <-> 2.14.
    assert (vision_v.major, vision_v.minor) == (0, torch_v.minor + 15), "torch and torchvision do not pair"


# --- .dockerignore ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "data/MNIST/raw/train-images-idx3-ubyte.gz",
        ".devdata/MNIST/raw/x",
        "runs/vit-mnist/last.pt",
        "tests/conftest.py",
        "test-artifacts/report.html",
        ".pytest_cache/v/x",
        ".ruff_cache/x",
        "app/__pycache__/main.cpython-311.pyc",
        "model_store/__pycache__/vit.cpython-311.pyc",
        "vit_digits.egg-info/PKG-INFO",
    ],
)
def test_dockerignore_keeps_out(path):
    assert dockerignored(path), f"{path} would be sent to the Docker build context"


def test_dockerignore_lets_every_copy_source_through(stages):
    for stage in stages.values():
        for ins in stage.all("COPY"):
            flags, sources, _ = copy_parts(ins)
            if "from" in flags:
                continue
            for source in sources:
                matches = [p.relative_to(REPO).as_posix() for p in REPO.glob(source.rstrip("/"))]
                for match in matches or [source.rstrip("/").replace("*", "x")]:
                    sample = match + "/x.py" if (REPO / match).is_dir() or source.endswith("/") else match
                    assert not dockerignored(sample), f"COPY {source}: {sample} is .dockerignored"
