"""docs/deploy.md: every setting described, its training commands and scale-out example valid."""

from __future__ import annotations

import re
import shlex

import yaml
from deployfiles import (
    COMPOSE_GPU,
    DEPLOY_DOC,
    doc_blocks,
    env_of,
    gpu_devices,
    healthcheck_argv,
    interpolate,
    load_compose,
    module_or_skip,
    volumes_of,
)


def test_deploy_doc_explains_every_setting(app_env):
    doc = DEPLOY_DOC.read_text()
    missing = [name for name in app_env if f"`{name}`" not in doc]
    assert not missing, f"docs/deploy.md does not describe {missing}"
    for command in ("docker compose up -d", "docker-compose.cpu.yml", "run --rm train", "TORCH_VARIANT=cpu"):
        assert command in doc, f"docs/deploy.md lacks `{command}`"


def test_deploy_doc_training_commands_parse():
    cli = module_or_skip("training.cli")
    default = load_compose(COMPOSE_GPU)["services"]["train"]["command"]
    commands = re.findall(r"docker compose run --rm train([^#\n]*)", "".join(doc_blocks("sh")))
    assert commands, "docs/deploy.md shows no training command"
    for rest in commands:
        args = shlex.split(rest) or default
        cli.get_args_parser().parse_args(args)  # SystemExit (a failure) on a wrong flag or model name


def test_deploy_doc_scale_example_pins_one_gpu_per_replica(scale_example, runtime, exposed_port, app_env):
    spec = interpolate(yaml.safe_load(scale_example))
    replicas = {name: svc for name, svc in spec["services"].items() if name.startswith("api")}
    assert len(replicas) >= 2
    ids = []
    for name, svc in replicas.items():
        (device,) = gpu_devices(svc)
        assert "count" not in device and len(device["device_ids"]) == 1, f"{name}: pin exactly one GPU"
        ids += device["device_ids"]
        assert svc["healthcheck"]["test"] == ["CMD", *healthcheck_argv(runtime.last("HEALTHCHECK"))]
        assert svc["expose"] == [str(exposed_port)]
        assert set(env_of(svc)) <= set(app_env)
        assert volumes_of(svc)[env_of(svc)["MODEL_STORE_DIR"]][1] == "ro"
    assert len(set(ids)) == len(ids), "two replicas on the same GPU"
    (nginx,) = doc_blocks("nginx")
    servers = re.findall(r"server (\S+):(\d+)", nginx)
    assert sorted(servers) == sorted((name, str(exposed_port)) for name in replicas), "nginx upstreams"
