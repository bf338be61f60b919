"""Open Inference Protocol v2 in-process: metadata, binary tensors, compression, output filter, errors."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import numpy as np

from testkit.reference import reference_probabilities

from .conftest import CNN, VIT, png_bytes

INFER = f"/v2/models/{CNN}/infer"


def tensor(images: np.ndarray, **kw) -> dict:  # type: ignore[no-untyped-def]
    return {
        "name": "image",
        "datatype": "UINT8",
        "shape": list(images.shape),
        "data": images.ravel().tolist(),
        **kw,
    }


def test_server_and_model_metadata(client):
    assert client.get("/v2").json() == {
        "name": "vit-digits",
        "version": "0.1.0",
        "extensions": ["binary_tensor_data", "model_configuration", "statistics"],
    }
    assert client.get("/v2/health/live").json() == {"live": True}
    assert client.get("/v2/health/ready").json() == {"ready": True}
    meta = client.get(f"/v2/models/{VIT}").json()
    assert meta["name"] == VIT
    assert meta["inputs"] == [  # image takes FP32 [-1, 1, 28, 28] too, and image_bytes [-1]
        {"name": "image", "datatype": "UINT8", "shape": [-1, 28, 28]},
        {"name": "image_bytes", "datatype": "BYTES", "shape": [-1, 1]},
    ]
    assert meta["outputs"] == [
        {"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]},
        {"name": "digit", "datatype": "INT64", "shape": [-1]},
        {"name": "digit_score", "datatype": "FP32", "shape": [-1]},
        {"name": "is_digit", "datatype": "BOOL", "shape": [-1]},
    ]
    r = client.get(f"/v2/models/{CNN}/ready")
    assert r.status_code == 200 and r.json()["ready"] is True
    r = client.get("/v2/models/nope/ready")
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_versioned_paths_serve_version_1_only(client, digits):
    images, _ = digits
    assert client.get(f"/v2/models/{VIT}/versions/1").json()["name"] == VIT
    assert client.get(f"/v2/models/{VIT}/versions/1/ready").json() == {"name": VIT, "ready": True}
    body = {"inputs": [tensor(images[:2])]}
    plain = client.post(INFER, json=body).json()
    versioned = client.post(f"/v2/models/{CNN}/versions/1/infer", json=body).json()
    assert versioned == plain
    for path in (f"/v2/models/{VIT}/versions/2", f"/v2/models/{VIT}/versions/2/ready"):
        r = client.get(path)
        assert r.status_code == 404 and "version" in r.json()["error"]
    r = client.post(f"/v2/models/{CNN}/versions/0/infer", json={"inputs": [tensor(images[:2])]})
    assert r.status_code == 404 and "version" in r.json()["error"]


def test_binary_tensors_in_and_out(client, test_store, digits):
    images, _ = digits
    ref = reference_probabilities(test_store, CNN, images)
    fp32 = (images[:, None] / 255.0).astype("<f4")
    header = json.dumps({
        "inputs": [{"name": "image", "datatype": "FP32", "shape": list(fp32.shape),
                    "parameters": {"binary_data_size": fp32.nbytes}}],
        "outputs": [{"name": "probabilities", "parameters": {"binary_data": True}},
                    {"name": "digit", "parameters": {"binary_data": False}}],
    }).encode()  # fmt: skip
    r = client.post(INFER, content=header + fp32.tobytes(),
                    headers={"Inference-Header-Content-Length": str(len(header))})  # fmt: skip
    assert r.status_code == 200, r.text
    n = int(r.headers["inference-header-content-length"])
    meta = json.loads(r.content[:n])
    probs_meta, digit_meta = meta["outputs"]
    assert probs_meta["parameters"]["binary_data_size"] == len(images) * 10 * 4 and "data" not in probs_meta
    probs = np.frombuffer(r.content[n:], dtype="<f4").reshape(-1, 10)
    assert np.allclose(probs, ref, atol=1e-5)
    assert digit_meta["data"] == list(ref.argmax(1))


def test_binary_data_output_default_and_output_filter(client, digits):
    images, _ = digits
    body = {"inputs": [tensor(images[:3])], "parameters": {"binary_data_output": True}}
    r = client.post(INFER, json=body)
    n = int(r.headers["inference-header-content-length"])
    meta = json.loads(r.content[:n])
    assert [o["name"] for o in meta["outputs"]] == ["probabilities", "digit", "digit_score", "is_digit"]
    assert len(r.content) - n == 3 * 10 * 4 + 3 * 8 + 3 * 4 + 3 * 1  # FP32, INT64, FP32, BOOL
    body = {"inputs": [tensor(images[:3])], "outputs": [{"name": "digit"}]}
    [only] = client.post(INFER, json=body).json()["outputs"]
    assert only["name"] == "digit" and only["shape"] == [3] and len(only["data"]) == 3


def test_compressed_requests(client, digits):
    images, _ = digits
    plain = client.post(INFER, json={"inputs": [tensor(images[:2])]}).json()
    raw = json.dumps({"inputs": [tensor(images[:2])]}).encode()
    for encoding, data in (("gzip", gzip.compress(raw)), ("deflate", zlib.compress(raw))):
        r = client.post(INFER, content=data, headers={"content-encoding": encoding})
        assert r.status_code == 200 and r.json() == plain, encoding
    r = client.post(INFER, content=b"not gzip", headers={"content-encoding": "gzip"})
    assert r.status_code == 400 and "gzip" in r.json()["error"]
    r = client.post(INFER, content=raw, headers={"content-encoding": "br"})
    assert r.status_code == 415


def test_gzip_bomb_is_413(make_client):
    c = make_client(max_body_bytes=64 * 1024)
    bomb = gzip.compress(b" " * (10 * 1024 * 1024))  # 10 KB that inflate to 10 MB
    assert len(bomb) < 64 * 1024
    r = c.post(INFER, content=bomb, headers={"content-encoding": "gzip"})
    assert r.status_code == 413 and "decompressed" in r.json()["error"]


def test_wrong_shapes_datatypes_and_names_are_400(client, digits):
    images, _ = digits
    good = tensor(images[:2])
    bad = {
        "datatype": {**good, "datatype": "INT32"},
        "shape uint8 4d": {**good, "shape": [2, 1, 28, 28]},
        "shape fp32 3d": {**good, "datatype": "FP32", "shape": [2, 28, 28]},
        "shape 27": {**good, "shape": [2, 28, 27], "data": [0] * (2 * 28 * 27)},
        "count": {**good, "data": good["data"][:-1]},
        "values": {**good, "data": [300] * (2 * 784)},
        "fractions": {**good, "data": [0.5] * (2 * 784)},
        "fp32 range": {**good, "datatype": "FP32", "shape": [2, 1, 28, 28], "data": [5.0] * (2 * 784)},
        "strings": {**good, "data": ["a"] * (2 * 784)},
        "a boolean among numbers": {**good, "data": [True] + good["data"][1:]},
        "ragged": {**good, "data": [[0] * 784, [0] * 783]},
        "no data": {k: v for k, v in good.items() if k != "data"},
        "name": {**good, "name": "input__0"},
        "zero batch": {**good, "shape": [0, 28, 28], "data": []},
        "negative batch": {**good, "shape": [-1, 28, 28]},
    }
    for case, t in bad.items():
        r = client.post(INFER, json={"inputs": [t]})
        assert r.status_code == 400, (case, r.text)
        assert set(r.json()) == {"error"} and r.json()["error"], case
    for case, body in {
        "two inputs": {"inputs": [good, good]},
        "no inputs": {"inputs": []},
        "unknown output": {"inputs": [good], "outputs": [{"name": "logits"}]},
        "not an object": [1, 2],
        "shape not ints": {"inputs": [{**good, "shape": ["a"]}]},
    }.items():
        r = client.post(INFER, json=body)
        assert r.status_code == 400 and set(r.json()) == {"error"}, (case, r.text)
        if "inputs" in case:
            assert "send exactly one, 'image' (UINT8 or FP32 pixels) or 'image_bytes'" in r.json()["error"]
    for case, (content, headers) in {
        "not json": (b"{oops", {}),
        "header length too big": (b"{}", {"Inference-Header-Content-Length": "99"}),
        "header length not a number": (b"{}", {"Inference-Header-Content-Length": "x"}),
    }.items():
        r = client.post(INFER, content=content, headers=headers)
        assert r.status_code == 400 and set(r.json()) == {"error"}, (case, r.text)
    header = json.dumps({"inputs": [{**good, "data": None, "parameters": {"binary_data_size": 5}}]}).encode()
    r = client.post(
        INFER, content=header + b"12345", headers={"Inference-Header-Content-Length": str(len(header))}
    )
    assert r.status_code == 400 and "binary_data_size" in r.json()["error"]


def test_fp32_values_are_checked_alike_in_json_and_binary(client):
    """Values outside 0..1 or not finite: the same 400 whether they come as JSON or as binary data (the
    binary path once clipped them to a picture and answered)."""

    def send(values: np.ndarray, binary: bool):
        t = {"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28]}
        if not binary:
            return client.post(INFER, json={"inputs": [{**t, "data": values.tolist()}]})
        raw = values.astype("<f4").tobytes()
        header = json.dumps({"inputs": [{**t, "parameters": {"binary_data_size": len(raw)}}]}).encode()
        return client.post(
            INFER, content=header + raw, headers={"Inference-Header-Content-Length": str(len(header))}
        )

    for case, value in (("200", 200.0), ("-1", -1.0), ("nan", float("nan")), ("inf", float("inf"))):
        values = np.full(784, value, np.float32)
        for binary in (False, True) if np.isfinite(value) else (True,):  # JSON has no NaN: binary only
            r = send(values, binary)
            assert r.status_code == 400, (case, r.status_code, r.text)
            assert ("0..1" if case in ("200", "-1") else "finite") in r.json()["error"], (case, r.json())
    edge = np.zeros(784, np.float32)
    edge[:2] = (1.0005, -0.0005)  # rounding just outside 0..1 is tolerated either way
    assert [send(edge, binary).status_code for binary in (False, True)] == [200, 200]


def test_encoded_pictures_as_bytes_and_their_errors(client, digits):
    images, _ = digits
    pictures = [base64.b64encode(png_bytes(images[i])).decode() for i in range(2)]
    good = {"name": "image_bytes", "datatype": "BYTES", "shape": [2], "data": pictures}
    plain = client.post(INFER, json={"inputs": [tensor(images[:2])]}).json()  # 28x28 MNIST: used as is
    r = client.post(INFER, json={"inputs": [good]})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][1] == plain["outputs"][1]  # the same digits
    assert np.allclose(r.json()["outputs"][0]["data"], plain["outputs"][0]["data"], atol=1e-5)
    nested = client.post(INFER, json={"inputs": [{**good, "shape": [2, 1], "data": [[p] for p in pictures]}]})
    assert nested.status_code == 200 and nested.json()["outputs"] == r.json()["outputs"]
    blob = b"".join(len(b).to_bytes(4, "little") + b for b in map(base64.b64decode, pictures))
    bad = {
        "datatype": ({**good, "datatype": "UINT8"}, "must be BYTES"),
        "shape": ({**good, "shape": [2, 28]}, "shape [N] or [N,1]"),
        "count": ({**good, "shape": [3]}, "has 2 elements; its shape needs 3"),
        "numbers": ({**good, "data": [1, 2]}, "base64 strings"),
        "not base64": ({**good, "data": ["%%%", pictures[0]]}, "element 0"),
        "not a picture": ({**good, "data": [pictures[0], base64.b64encode(b"hello").decode()]}, "image 1"),
        "no data": ({k: v for k, v in good.items() if k != "data"}, "no data"),
        "too many": ({**good, "shape": [65], "data": pictures * 32 + pictures[:1]}, "at most"),
    }
    for why, (inp, message) in bad.items():
        r = client.post(INFER, json={"inputs": [inp]})
        assert r.status_code in (400, 413, 422), (why, r.status_code, r.text)
        assert message in r.json()["error"], (why, r.json())
    for why, data in (("short length", blob[:2]), ("element past the end", blob[:-5])):
        header = json.dumps(
            {"inputs": [{**good, "data": None, "parameters": {"binary_data_size": len(data)}}]}
        )
        r = client.post(INFER, content=header.encode() + data,
                        headers={"Inference-Header-Content-Length": str(len(header))})  # fmt: skip
        assert r.status_code == 400 and "image_bytes" in r.json()["error"], (why, r.text)
    header = json.dumps({"inputs": [{**good, "data": None, "parameters": {"binary_data_size": len(blob)}}]})
    r = client.post(
        INFER, content=header.encode() + blob, headers={"Inference-Header-Content-Length": str(len(header))}
    )
    assert r.status_code == 200 and r.json()["outputs"] == nested.json()["outputs"]
