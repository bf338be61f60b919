"""Triton's model configuration, statistics and model repository extensions, which perf_analyzer, Model
Analyzer and tritonclient's ``get_model_config`` / ``get_inference_statistics`` /
``get_model_repository_index`` read: the configuration is valid in Triton's own ModelConfig schema and
says what the service does; the statistics are the whole service's counts, whichever worker and
protocol took the requests; the index lists the models, and loading one is refused saying why."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from .conftest import CNN, VIT

tritonclient_grpc = pytest.importorskip("tritonclient.grpc")
model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
from google.protobuf import json_format  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402


def triton_config(config: dict) -> object:
    """The JSON parsed strictly into tritonclient's copy of Triton's ModelConfig (an unknown field or
    enum value fails)."""
    return json_format.ParseDict(config, model_config_pb2.ModelConfig())


def test_the_configuration_is_a_triton_model_config_that_says_what_the_service_does(make_client):
    client = make_client(max_batch_images=48, max_batch_size=16, max_wait_ms=3.5)
    assert set(client.get("/v2").json()["extensions"]) >= {"model_configuration", "statistics"}
    for name in (VIT, CNN):
        r = client.get(f"/v2/models/{name}/config")
        assert r.status_code == 200, r.text
        config = triton_config(r.json())
        assert config.name == name and config.max_batch_size == 48
        inputs = {i.name: i for i in config.input}
        assert list(inputs["image"].dims) == [28, 28]
        assert inputs["image"].data_type == model_config_pb2.TYPE_UINT8
        assert inputs["image_bytes"].data_type == model_config_pb2.TYPE_STRING
        assert inputs["image"].optional and inputs["image_bytes"].optional  # one of the two per request
        outputs = {o.name: o for o in config.output}
        assert list(outputs["probabilities"].dims) == [10]
        assert set(outputs) == {o["name"] for o in client.get(f"/v2/models/{name}").json()["outputs"]}
        assert list(config.dynamic_batching.preferred_batch_size) == [16]
        assert config.dynamic_batching.max_queue_delay_microseconds == 3500
        assert config.instance_group[0].kind == model_config_pb2.ModelInstanceGroup.KIND_CPU
        assert client.get(f"/v2/models/{name}/versions/1/config").json() == r.json()
    r = client.get(f"/v2/models/{VIT}/versions/2/config")
    assert r.status_code == 404 and "version" in r.json()["error"]
    r = client.get("/v2/models/nope/config")
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_the_repository_index_lists_the_models_and_loading_is_refused_saying_why(client):
    every = client.post("/v2/repository/index")  # tritonclient sends no body
    assert every.status_code == 200, every.text
    assert sorted(every.json(), key=lambda m: m["name"]) == [
        {"name": name, "version": "1", "state": "READY"} for name in sorted((VIT, CNN))
    ]
    assert client.post("/v2/repository/index", json={"ready": True}).json() == every.json()
    r = client.post("/v2/repository/index", json={"ready": "perhaps"})
    assert r.status_code == 400 and "repository index" in r.json()["error"]
    for action in ("load", "unload"):
        r = client.post(f"/v2/repository/models/{VIT}/{action}")
        assert r.status_code == 405 and "loaded from the store at start" in r.json()["error"], r.text
        assert r.headers["allow"] == ""  # no method is allowed there


def test_metadata_names_each_input_once(client):
    """Tools key the inputs by name (perf_analyzer appends a second entry's dims to the first's), and
    size them from the shape without its batch dimension, which must leave at least one."""
    for name in (VIT, CNN):
        inputs = client.get(f"/v2/models/{name}").json()["inputs"]
        names = [i["name"] for i in inputs]
        assert len(names) == len(set(names)) and set(names) == {"image", "image_bytes"}
        assert all(len(i["shape"]) >= 2 and i["shape"][0] == -1 for i in inputs)


def test_statistics_count_every_request_of_every_worker_and_protocol(start_server, digits):
    images, _ = digits
    server = start_server(workers=2, MAX_QUEUE_SIZE="8")
    grpc_client = tritonclient_grpc.InferenceServerClient(server.grpc_target)
    try:
        before = grpc_client.get_inference_statistics(VIT, as_json=True)["model_stats"][0]
        assert int(before.get("inference_count", 0)) == 0  # warming up is not a request
        sizes = [1, 3, 1, 2, 1]  # images per request, REST and gRPC in turn
        for k, n in enumerate(sizes):
            if k % 2:
                inp = tritonclient_grpc.InferInput("image", [n, 28, 28], "UINT8")
                inp.set_data_from_numpy(images[:n])
                grpc_client.infer(VIT, [inp])
            else:
                body = {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [n, 28, 28],
                                    "data": images[:n].ravel().tolist()}]}  # fmt: skip
                r = httpx.post(f"{server.url}/v2/models/{VIT}/infer", json=body, timeout=30)
                assert r.status_code == 200, r.text
        # a request larger than the model's queue reaches the engine and is refused: a failure
        inp = tritonclient_grpc.InferInput("image", [9, 28, 28], "UINT8")
        inp.set_data_from_numpy(np.repeat(images[:1], 9, axis=0))
        with pytest.raises(InferenceServerException, match="overloaded"):
            grpc_client.infer(VIT, [inp])

        rest = httpx.get(f"{server.url}/v2/models/{VIT}/stats", timeout=10).json()["model_stats"][0]
        stats = rest["inference_stats"]
        assert rest["name"] == VIT and rest["version"] == "1"
        assert rest["inference_count"] == sum(sizes)
        assert 1 <= rest["execution_count"] <= len(sizes)
        assert stats["success"]["count"] == len(sizes) and stats["success"]["ns"] > 0
        assert stats["fail"]["count"] == 1
        assert stats["queue"]["count"] == stats["compute_infer"]["count"] == len(sizes)
        assert stats["compute_infer"]["ns"] > 0
        assert stats["success"]["ns"] >= stats["queue"]["ns"] + stats["compute_infer"]["ns"]
        assert rest["last_inference"] > 0
        # per batch size the engine ran: its passes add up to the executions, their images to the inferences
        batches = rest["batch_stats"]
        assert [b["batch_size"] for b in batches] == sorted({b["batch_size"] for b in batches})
        assert sum(b["compute_infer"]["count"] for b in batches) == rest["execution_count"]
        assert sum(b["batch_size"] * b["compute_infer"]["count"] for b in batches) == sum(sizes)
        assert all(b["compute_infer"]["ns"] > 0 and b["compute_input"]["ns"] == 0 for b in batches)
        # gRPC answers the same figures, for one model or (no name) for every model
        over_grpc = grpc_client.get_inference_statistics(VIT, as_json=True)["model_stats"][0]
        assert int(over_grpc["inference_count"]) == sum(sizes)
        passes = lambda stats: [(int(b["batch_size"]), int(b["compute_infer"]["count"])) for b in stats]  # noqa: E731
        assert passes(over_grpc["batch_stats"]) == passes(batches)
        assert int(over_grpc["inference_stats"]["fail"]["count"]) == 1
        every = grpc_client.get_inference_statistics(as_json=True)["model_stats"]
        assert {m["name"] for m in every} == {VIT, CNN}
        cnn = httpx.get(f"{server.url}/v2/models/stats", timeout=10).json()["model_stats"]
        assert [(m["inference_count"], m["batch_stats"]) for m in cnn if m["name"] == CNN] == [(0, [])]
        # the repository index over gRPC, as a Triton client lists the models; loading refused
        index = grpc_client.get_model_repository_index(as_json=True)["models"]
        assert sorted((m["name"], m["state"]) for m in index) == sorted([(VIT, "READY"), (CNN, "READY")])
        with pytest.raises(InferenceServerException, match="loaded from the store at start"):
            grpc_client.load_model(VIT)
        # the configuration over gRPC is the REST one
        over_grpc = grpc_client.get_model_config(CNN).config
        rest_config = httpx.get(f"{server.url}/v2/models/{CNN}/config", timeout=10).json()
        assert over_grpc == triton_config(rest_config)
        with pytest.raises(InferenceServerException, match="nope"):
            grpc_client.get_model_config("nope")
    finally:
        grpc_client.close()
