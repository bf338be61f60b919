"""docker-compose.yml and docker-compose.cpu.yml agree with the image, the app's settings and the
training CLI, and with each other."""

from __future__ import annotations

import json

from deployfiles import (
    COMPOSE_CPU,
    COMPOSE_GPU,
    INTERNAL_SETTINGS,
    check_settings_accept,
    drain_budget_s,
    env_of,
    gpu_devices,
    healthcheck_argv,
    load_compose,
    module_or_skip,
    seconds,
    settings_env_names,
    volumes_of,
)


def test_compose_api_ports_match_the_image(compose, exposed_ports):
    _, spec = compose
    ports = spec["services"]["api"]["ports"]
    assert [str(p).split(":")[-1] for p in ports] == [str(p) for p in exposed_ports], ports


def test_compose_healthcheck_is_the_images(compose, runtime):
    _, spec = compose
    check = spec["services"]["api"]["healthcheck"]
    assert check["test"] == ["CMD", *healthcheck_argv(runtime.last("HEALTHCHECK"))], (
        "compose and image disagree"
    )
    assert seconds(check["start_period"]) >= 60, "model loading + warm-up needs a start period"


def test_compose_api_env_is_exactly_the_apps_settings(compose, app_settings, app_env, monkeypatch):
    _, spec = compose
    env = env_of(spec["services"]["api"])
    app_env = {k: v for k, v in app_env.items() if k not in INTERNAL_SETTINGS}
    assert set(env) == set(app_env), (
        f"compose passes {sorted(set(env) - set(app_env))} that Settings does not read, and misses "
        f"{sorted(set(app_env) - set(env))} (pass every setting through so operators can set it)"
    )
    check_settings_accept(app_settings, {k: v for k, v in env.items() if v is not None}, monkeypatch)


def test_compose_mounts_the_model_store_read_only(compose):
    _, spec = compose
    api = spec["services"]["api"]
    store = env_of(api)["MODEL_STORE_DIR"]
    source, mode = volumes_of(api)[store]
    assert mode == "ro", "the API only reads the model store"
    train = spec["services"]["train"]
    assert env_of(train)["MODEL_STORE_DIR"] in volumes_of(train)
    train_source, train_mode = volumes_of(train)[env_of(train)["MODEL_STORE_DIR"]]
    assert (train_source, train_mode) == (source, "rw"), "train must write into the store the API serves"
    assert source in spec.get("volumes", {}) or source.startswith((".", "/")), source


def test_compose_restart_and_shutdown(compose, app_env):
    _, spec = compose
    api = spec["services"]["api"]
    assert api["restart"] in ("unless-stopped", "always")
    assert api.get("stop_signal", "SIGTERM") == "SIGTERM"
    assert seconds(api["stop_grace_period"]) > drain_budget_s(app_env), (
        "docker would SIGKILL a draining server"
    )


def test_compose_serves_on_the_published_ports(compose, exposed_port, exposed_grpc_port):
    """HOST/PORT/GRPC_PORT are fixed, not passed through: a PORT in the operator's shell must not move
    the server away from the published ports and the healthcheck."""
    _, spec = compose
    env = env_of(spec["services"]["api"])
    assert env["HOST"] == "0.0.0.0" and env["PORT"] == str(exposed_port), env
    assert env["GRPC_PORT"] == str(exposed_grpc_port), env


def test_compose_api_runs_read_only(compose):
    """The same writable paths as on Kubernetes: a tmpfs /tmp and a /dev/shm sized for the app."""
    _, spec = compose
    api = spec["services"]["api"]
    assert api.get("read_only") is True
    assert "/tmp" in api.get("tmpfs", [])
    assert bytes_of(api["shm_size"]) >= 256 << 20


def bytes_of(size: str) -> int:
    number, unit = str(size)[:-1], str(size)[-1].lower()
    return int(number) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit] if unit.isalpha() else int(size)


def test_compose_builds_the_right_targets(compose, stages):
    kind, spec = compose
    for service, target in (("api", "runtime"), ("train", "train")):
        build = spec["services"][service]["build"]
        assert build["target"] == target and target in stages
        assert build["args"]["TORCH_VARIANT"] == ("cuda" if kind == "gpu" else "cpu")
        assert spec["services"][service]["image"].endswith(":cuda" if kind == "gpu" else ":cpu")


def test_compose_gpu_reservation(compose):
    kind, spec = compose
    for name in ("api", "train"):
        devices = gpu_devices(spec["services"][name])
        if kind == "cpu":
            assert not devices, f"{name}: the CPU file must not reserve a GPU"
            continue
        assert len(devices) == 1, f"{name}: one GPU per container"
        device = devices[0]
        assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
        assert device.get("count") == 1 or len(device.get("device_ids", [])) == 1
    expected = "cuda" if kind == "gpu" else "cpu"
    assert env_of(spec["services"]["api"])["DEVICE"] == expected


def test_compose_train_runs_the_real_training_cli(compose):
    _, spec = compose
    train = spec["services"]["train"]
    assert "train" in train["profiles"], "training is opt-in: --profile train / docker compose run train"
    cli = module_or_skip("training.cli")
    args = cli.get_args_parser().parse_args(train["command"])
    assert args.command == "train"
    assert "--store-dir" not in train["command"], "MODEL_STORE_DIR decides where checkpoints go"
    train_env = settings_env_names(module_or_skip("training.settings").TrainSettings)
    assert set(env_of(train)) <= set(train_env)
    assert env_of(train)["DATA_ROOT"] in volumes_of(train), "MNIST needs a volume (downloaded once)"


def test_compose_files_differ_only_in_gpu_and_variant():
    def strip(spec: dict) -> dict:
        spec = json.loads(json.dumps(spec))
        for service in spec["services"].values():
            service.pop("deploy", None)
            service.pop("command", None)  # the CPU file trains a CPU-sized default
            service.pop("image", None)
            service["build"]["args"].pop("TORCH_VARIANT")
            service["environment"] = {k: v for k, v in env_of(service).items() if k != "DEVICE"}
        return spec

    gpu, cpu = strip(load_compose(COMPOSE_GPU)), strip(load_compose(COMPOSE_CPU))
    assert gpu == cpu, "docker-compose.cpu.yml drifted from docker-compose.yml"
