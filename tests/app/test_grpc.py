"""The Open Inference Protocol over gRPC on a real ``python -m app``: the official tritonclient.grpc,
the protocol's typed contents through a plain channel, errors as gRPC statuses, metrics, drain on
SIGTERM, a port someone else holds, and the streaming extension (ModelStreamInfer)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from queue import Queue

import grpc
import httpx
import numpy as np
import pytest

from app.oip_grpc import messages as pb
from testkit.metrics import total
from testkit.server import ServiceProcess, wait_for
from testkit.server import child_commands as children

from .conftest import CNN, VIT, pictures_and_v1_answers, queued_in_the_batcher

tritonclient_grpc = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

INFER = f"/{pb.SERVICE}/ModelInfer"


def rest_v2(server: ServiceProcess, name: str, images: np.ndarray) -> dict[str, list]:
    """The same images through the REST route: what gRPC must answer too."""
    body = {"inputs": [{"name": "image", "datatype": "UINT8", "shape": list(images.shape),
                        "data": images.ravel().tolist()}]}  # fmt: skip
    r = httpx.post(f"{server.url}/v2/models/{name}/infer", json=body, timeout=30)
    assert r.status_code == 200, r.text
    return {o["name"]: np.reshape(o["data"], o["shape"]).tolist() for o in r.json()["outputs"]}


def call(target: str, request: object, metadata: tuple = ()) -> object:
    """ModelInfer through a plain channel with the service's own messages (typed contents, no client)."""
    return call_with_trailer(target, request, metadata)[0]


def call_with_trailer(target: str, request: object, metadata: tuple = ()) -> tuple[object, dict[str, str]]:
    with grpc.insecure_channel(target) as channel:
        reply, done = unary(channel, pb.SERVICE, "ModelInfer").with_call(
            request, timeout=30, metadata=metadata
        )
        return reply, dict(done.trailing_metadata())


def unary(channel: grpc.Channel, service: str, name: str):  # type: ignore[no-untyped-def]
    """One of the service's methods through a plain channel, with the messages the service declares."""
    request_class, reply_class = (pb.METHODS if service == pb.SERVICE else pb.HEALTH_METHODS)[name]
    return channel.unary_unary(
        f"/{service}/{name}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=reply_class.FromString,
    )


def test_tritonclient_grpc_answers_as_rest_does(start_server, digits):
    server = start_server(workers=2)
    images, _ = digits
    client = tritonclient_grpc.InferenceServerClient(server.grpc_target)
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready(VIT) and client.is_model_ready(CNN, model_version="1")
        assert client.get_server_metadata(as_json=True)["name"] == "vit-digits"
        meta = client.get_model_metadata(VIT, as_json=True)
        assert {"name": "image_bytes", "datatype": "BYTES", "shape": ["-1", "1"]} in meta["inputs"]
        assert [o["name"] for o in meta["outputs"]] == ["probabilities", "digit", "digit_score", "is_digit"]
        for name in (VIT, CNN):
            want = rest_v2(server, name, images)
            inp = tritonclient_grpc.InferInput("image", list(images.shape), "UINT8")
            inp.set_data_from_numpy(images)
            res = client.infer(name, [inp], request_id="42")
            assert res.get_response().id == "42" and res.get_response().model_version == "1"
            assert np.allclose(res.as_numpy("probabilities"), want["probabilities"], atol=1e-6)
            assert res.as_numpy("digit").tolist() == want["digit"]
            assert res.as_numpy("is_digit").tolist() == want["is_digit"]
            assert np.allclose(res.as_numpy("digit_score"), want["digit_score"], atol=1e-4)
            fp32 = (images[:, None] / 255.0).astype(np.float32)
            inp = tritonclient_grpc.InferInput("image", list(fp32.shape), "FP32")
            inp.set_data_from_numpy(fp32)
            only = client.infer(name, [inp], outputs=[tritonclient_grpc.InferRequestedOutput("digit")])
            assert [o.name for o in only.get_response().outputs] == ["digit"]
            assert only.as_numpy("digit").tolist() == want["digit"]
        # Encoded pictures (BYTES), preprocessed as /v1 uploads are: the same answers as /v1.
        pictures, v1 = pictures_and_v1_answers(server, images)
        inp = tritonclient_grpc.InferInput("image_bytes", [len(pictures)], "BYTES")
        inp.set_data_from_numpy(np.array(pictures, dtype=np.object_))
        res = client.infer(VIT, [inp])
        assert np.allclose(res.as_numpy("probabilities"), [p["probabilities"] for p in v1], atol=1e-5)
    finally:
        client.close()
    # The protocol's typed contents, as a client without the raw extension sends them (three images:
    # parsed off the event loop, as a large tensor is).
    want = rest_v2(server, CNN, images[:3])
    request = pb.ModelInferRequest(model_name=CNN)
    request.inputs.add(name="image", datatype="UINT8", shape=[3, 28, 28]).contents.uint_contents.extend(
        images[:3].ravel().tolist()
    )
    reply = call(server.grpc_target, request)
    assert [o.name for o in reply.outputs] == ["probabilities", "digit", "digit_score", "is_digit"]
    assert np.frombuffer(reply.raw_output_contents[1], "<i8").tolist() == want["digit"]
    request = pb.ModelInferRequest(model_name=VIT)
    request.inputs.add(name="image_bytes", datatype="BYTES", shape=[1]).contents.bytes_contents.append(
        pictures[0]
    )
    reply = call(server.grpc_target, request)
    assert np.frombuffer(reply.raw_output_contents[1], "<i8")[0] == v1[0]["digit"]
    # Every call counted in the service's one /metrics, whichever worker took it.
    samples = server.metrics()
    assert total(samples, "vit_digits_requests_total", method="GRPC", route=INFER, status="200") == 7


def test_grpc_health_checks_answer_as_readiness(start_server):
    """gRPC's standard health protocol (Kubernetes grpc probes, grpc-health-probe, client-side health
    checking): SERVING when ready."""
    server = start_server(workers=1, SHUTDOWN_GRACE_S="600")  # the Watch calls must not hold it
    with grpc.insecure_channel(server.grpc_target) as channel:
        check = unary(channel, pb.HEALTH, "Check")
        for service in ("", pb.SERVICE):
            assert (
                check(pb.HealthCheckRequest(service=service), timeout=10).status
                == pb.HealthCheckResponse.SERVING
            )
        with pytest.raises(grpc.RpcError) as caught:
            check(pb.HealthCheckRequest(service="nope"), timeout=10)
        assert (
            caught.value.code() == grpc.StatusCode.NOT_FOUND and "unknown service" in caught.value.details()
        )
        watch = health_watch(channel)
        # Watch (gRPC's client-side health checking): the status now, then each change. Another service is
        # SERVICE_UNKNOWN with the call kept open; SIGTERM turns the server NOT_SERVING and ends the calls.
        watching = watch(pb.HealthCheckRequest(), timeout=60)
        unknown = watch(pb.HealthCheckRequest(service="nope"), timeout=60)
        assert next(watching).status == pb.HealthCheckResponse.SERVING
        assert next(unknown).status == pb.HealthCheckResponse.SERVICE_UNKNOWN
        server.proc.send_signal(signal.SIGTERM)
        assert [r.status for r in watching] == [pb.HealthCheckResponse.NOT_SERVING]  # then the call ends
        assert list(unknown) == []
    assert server.proc.wait(timeout=60) == 0, server.log()


def health_watch(channel: grpc.Channel):  # type: ignore[no-untyped-def]
    """gRPC health's Watch through a plain channel: a server stream of HealthCheckResponses."""
    return channel.unary_stream(
        f"/{pb.HEALTH}/Watch",
        request_serializer=pb.HealthCheckRequest.SerializeToString,
        response_deserializer=pb.HealthCheckResponse.FromString,
    )


def test_grpc_reflection_lets_a_client_call_without_the_proto_files(start_server, digits):
    """As grpcurl does: list the services, fetch ModelInfer's messages from the server, call it with them."""
    from google.protobuf import descriptor_pool, message_factory
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    server = start_server(workers=1)
    images, _ = digits
    with grpc.insecure_channel(server.grpc_target) as channel:
        reflected = ProtoReflectionDescriptorDatabase(channel)
        assert {pb.SERVICE, pb.HEALTH} <= set(reflected.get_services())
        pool = descriptor_pool.DescriptorPool(reflected)  # nothing of ours: only what the server describes
        method = pool.FindServiceByName(pb.SERVICE).FindMethodByName("ModelInfer")
        request_class = message_factory.GetMessageClass(method.input_type)
        reply_class = message_factory.GetMessageClass(method.output_type)
        request = request_class(model_name=VIT, raw_input_contents=[images[:1].tobytes()])
        request.inputs.add(name="image", datatype="UINT8", shape=[1, 28, 28])
        infer = channel.unary_unary(
            INFER,
            request_serializer=request_class.SerializeToString,
            response_deserializer=reply_class.FromString,
        )
        reply = infer(request, timeout=30)
    assert [o.name for o in reply.outputs] == ["probabilities", "digit", "digit_score", "is_digit"]
    want = rest_v2(server, VIT, images[:1])["digit"]
    assert np.frombuffer(reply.raw_output_contents[1], "<i8").tolist() == want


def test_grpc_errors_are_statuses_that_say_what_is_wrong(start_server, digits):
    server = start_server(workers=1)
    images, _ = digits
    good = images[:2]

    def request(**changes: object) -> object:
        r = pb.ModelInferRequest(
            model_name=changes.pop("model", CNN), model_version=changes.pop("version", "")
        )
        t = r.inputs.add(name=changes.pop("name", "image"), datatype=changes.pop("datatype", "UINT8"),
                         shape=changes.pop("shape", [2, 28, 28]))  # fmt: skip
        if (raw := changes.pop("raw", good.tobytes())) is not None:
            r.raw_input_contents.append(raw)
        for name in changes.pop("outputs", []):
            r.outputs.add(name=name)
        if changes.pop("typed_too", False):
            t.contents.uint_contents.append(1)
        if changes.pop("int_contents", False):  # a UINT8 image's values where an INT32 tensor's go
            t.contents.int_contents.extend(good.ravel().tolist())
        if changes.pop("two_inputs", False):
            r.inputs.add(name="image", datatype="UINT8", shape=[2, 28, 28])
        assert not changes
        return r

    NOT_FOUND, INVALID, TOO_LARGE = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT,
                                     grpc.StatusCode.RESOURCE_EXHAUSTED)  # fmt: skip
    cases = {
        "unknown model": (request(model="nope"), NOT_FOUND, "unknown model"),
        "unknown version": (request(version="2"), NOT_FOUND, "unknown version"),
        "shape": (request(shape=[2, 28, 27]), INVALID, r"shape \[N,28,28\]"),
        "short raw": (request(raw=good.tobytes()[:-1]), INVALID, "1567 bytes"),
        "datatype": (request(datatype="INT32"), INVALID, "use UINT8 or FP32"),
        "input name": (request(name="input__0"), INVALID, "unknown input"),
        "output name": (request(outputs=["logits"]), INVALID, "unknown output 'logits'"),
        "raw and typed": (request(typed_too=True), INVALID, "both raw_input_contents and typed"),
        "raw and a wrong field": (request(int_contents=True), INVALID, "both raw_input_contents and typed"),
        "wrong field": (request(raw=None, int_contents=True), INVALID, "uint_contents .*not int_contents"),
        "two fields": (request(raw=None, typed_too=True, int_contents=True), INVALID, "not int_contents"),
        "two inputs": (request(two_inputs=True), INVALID, "send exactly one"),
        "too many": (request(shape=[65, 28, 28], raw=bytes(65 * 784)), TOO_LARGE, "at most 64"),
        "not a picture": (
            request(name="image_bytes", datatype="BYTES", shape=[1], raw=b"\5\0\0\0hello"),
            INVALID, "image 0",
        ),
    }  # fmt: skip
    for why, (req, code, message) in cases.items():
        with pytest.raises(grpc.RpcError) as caught:
            call(server.grpc_target, req)
        assert caught.value.code() == code, (why, caught.value.code(), caught.value.details())
        assert re.search(message, caught.value.details()), (why, caught.value.details())
    # Each call named as an HTTP request is (the client's x-request-id, else a new one), in the trailing
    # metadata and the access log, which ACCESS_LOG=errors (the default) writes for the failures.
    _, trailer = call_with_trailer(server.grpc_target, request(), (("x-request-id", "trace-7"),))
    assert trailer["x-request-id"] == "trace-7"
    with pytest.raises(grpc.RpcError) as caught:
        call(server.grpc_target, request(model="nope"), (("x-request-id", "trace-8"),))
    assert dict(caught.value.trailing_metadata())["x-request-id"] == "trace-8"
    line = re.compile(r"GRPC /inference.GRPCInferenceService/ModelInfer 404 [\d.]+ ms id=trace-8")
    # the status reaches the client as the call aborts, a moment before the line is written
    assert wait_for(lambda: line.search(server.log()), 10), server.log()
    assert "id=trace-7" not in server.log()  # a success, not written under ACCESS_LOG=errors
    client = tritonclient_grpc.InferenceServerClient(server.grpc_target)
    try:
        with pytest.raises(InferenceServerException, match="unknown model"):
            client.is_model_ready("nope")
        with pytest.raises(InferenceServerException, match="unknown model"):
            client.get_model_metadata("nope")
    finally:
        client.close()

    def failures(status: str) -> float:  # counted as the call ends, a moment after its status left
        return total(server.metrics(), "vit_digits_requests_total", method="GRPC", route=INFER, status=status)

    assert wait_for(lambda: failures("400") == 11, 10), failures("400")
    assert failures("404") == 3 and failures("500") == 0


def test_sigterm_answers_grpc_calls_in_progress(start_server, digits):
    per_call, n_calls = 256, 6
    server = start_server(workers=1, MAX_BATCH_SIZE="1", MAX_QUEUE_SIZE="8192",
                          MAX_BATCH_IMAGES=str(per_call), REQUEST_TIMEOUT_S="120")  # fmt: skip
    images, _ = digits
    batch = np.resize(images, (per_call, 28, 28))

    def infer() -> np.ndarray:
        client = tritonclient_grpc.InferenceServerClient(server.grpc_target)
        try:
            inp = tritonclient_grpc.InferInput("image", list(batch.shape), "UINT8")
            inp.set_data_from_numpy(batch)
            return client.infer(VIT, [inp], client_timeout=120).as_numpy("digit")
        finally:
            client.close()

    with ThreadPoolExecutor(n_calls) as pool:
        futures = [pool.submit(infer) for _ in range(n_calls)]
        pending = queued_in_the_batcher(server, VIT, n_calls * per_call)
        assert pending > 100, "the model drained the queue before the signal: test is not meaningful"
        server.proc.send_signal(signal.SIGTERM)
        answers = [f.result(timeout=60) for f in futures]  # the timeout only catches a hang
    assert server.proc.wait(timeout=30) == 0, server.log()
    assert all(len(a) == per_call for a in answers)


def test_grpc_through_a_killed_worker_and_a_killed_engine(start_server, digits):
    """A SIGKILLed worker: new calls reach the other, and its replacement listens again. A SIGKILLed engine:
    ServerReady turns false and calls get UNAVAILABLE at once (with retry-after), until it is back."""
    server = start_server(workers=2)
    images, _ = digits
    request = pb.ModelInferRequest(model_name=VIT, raw_input_contents=[images[:1].tobytes()])
    request.inputs.add(name="image", datatype="UINT8", shape=[1, 28, 28])
    procs = children(server.proc.pid)
    workers = [pid for pid, c in procs.items() if "app.worker" in c]
    os.kill(workers[0], signal.SIGKILL)
    # Until the killed process has exited (every thread: its sockets close with the last), the kernel
    # may still hand a connection to its listener (reset: UNAVAILABLE, which gRPC clients retry); HTTP's
    # one shared socket has no such window. Reaped by the supervisor = exited.
    assert wait_for(lambda: workers[0] not in children(server.proc.pid), 10)
    for _ in range(6):  # a new channel each time: the kernel hands it to a live worker's listener
        assert len(call(server.grpc_target, request).raw_output_contents) == 4
    assert wait_for(
        lambda: len([c for c in children(server.proc.pid).values() if "app.worker" in c]) == 2, 60
    )
    assert wait_for(lambda: server_ready(server.grpc_target), 60), "not ready after the worker's replacement"
    [engine] = [pid for pid, c in children(server.proc.pid).items() if "app.engine" in c]
    os.kill(engine, signal.SIGKILL)
    assert wait_for(lambda: not server_ready(server.grpc_target), 10), "still ready with the engine gone"
    started = time.monotonic()
    try:
        call(server.grpc_target, request)  # succeeds only if the new engine was already up
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
        assert dict(exc.trailing_metadata())["retry-after"] == "1"
        assert time.monotonic() - started < 5, "not at once: waited for the engine"
    assert wait_for(lambda: server_ready(server.grpc_target), 120), "not ready after the engine's restart"
    assert len(call(server.grpc_target, request).raw_output_contents) == 4


def server_ready(target: str) -> bool:
    try:
        with grpc.insecure_channel(target) as channel:
            return unary(channel, pb.SERVICE, "ServerReady")(pb.ServerReadyRequest(), timeout=5).ready
    except grpc.RpcError:
        return False


def test_a_grpc_connection_that_never_says_hello_is_closed_after_the_header_timeout(start_server):
    server = start_server(workers=1, HEADER_TIMEOUT_S="1")
    host, port = server.grpc_target.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as silent:
        silent.sendall(b"PR")  # two bytes of the HTTP/2 preface, then nothing
        started, heard = time.monotonic(), b""
        try:
            while chunk := silent.recv(1024):  # the server's SETTINGS, then its GOAWAY and EOF
                heard += chunk
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 8, "the half-open connection was left open"
        assert b"handshake timeout" in heard, heard
    request = pb.ModelInferRequest(model_name=VIT, raw_input_contents=[bytes(784)])
    request.inputs.add(name="image", datatype="UINT8", shape=[1, 28, 28])
    assert len(call(server.grpc_target, request).raw_output_contents) == 4  # a normal client is served


def test_a_grpc_port_someone_holds_stops_the_start_with_a_reason(test_store):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = {"MODEL_STORE_DIR": str(test_store), "DEVICE": "cpu", "GRPC_PORT": str(port)}
        server = ServiceProcess(env, workers=1).spawn()
        try:
            code = server.proc.wait(timeout=60)
        finally:
            server.stop()
    assert code != 0 and f"GRPC_PORT {port} on 127.0.0.1 is in use" in server.log(), server.log()
    off = ServiceProcess({"MODEL_STORE_DIR": str(test_store), "DEVICE": "cpu", "GRPC_PORT": "0"}, workers=1)
    with off:  # GRPC_PORT=0: HTTP alone
        assert httpx.get(f"{off.url}/v2/health/ready").status_code == 200
        assert "gRPC" not in off.log()


STREAM = f"/{pb.SERVICE}/ModelStreamInfer"


def streaming_client(server: ServiceProcess):  # type: ignore[no-untyped-def]
    """A tritonclient stream to the server, and the queue its answers land in as (result, error)."""
    answers: Queue = Queue()
    client = tritonclient_grpc.InferenceServerClient(server.grpc_target)
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    return client, answers


def stream_batches(client, model: str, batch: np.ndarray, n: int) -> None:  # type: ignore[no-untyped-def]
    """``n`` requests of ``batch`` each on the client's stream."""
    for _ in range(n):
        inp = tritonclient_grpc.InferInput("image", list(batch.shape), "UINT8")
        inp.set_data_from_numpy(batch)
        client.async_stream_infer(model, [inp])


def test_a_stream_answers_each_request_in_order_and_goes_on_after_an_error(start_server, digits):
    """tritonclient's start_stream / async_stream_infer: every request answered on the stream, in the
    order sent, as ModelInfer answers it; one that fails gets its error and the stream goes on."""
    server = start_server(workers=2)
    images, _ = digits
    want = {name: rest_v2(server, name, images) for name in (VIT, CNN)}
    client, answers = streaming_client(server)
    try:
        sent = []
        for i in range(len(images)):
            model = (VIT, CNN)[i % 2]
            inp = tritonclient_grpc.InferInput("image", [1, 28, 28], "UINT8")
            inp.set_data_from_numpy(images[i : i + 1])
            client.async_stream_infer(model, [inp], request_id=f"r{i}", enable_empty_final_response=i == 3)
            sent.append((f"r{i}", model, i))
            if i == 4:  # a bad shape and an unknown model, among the good ones
                bad = tritonclient_grpc.InferInput("image", [1, 28, 27], "UINT8")
                bad.set_data_from_numpy(np.zeros((1, 28, 27), np.uint8))
                client.async_stream_infer(VIT, [bad], request_id="bad-shape")
                client.async_stream_infer("nope", [inp], request_id="no-model")
                sent += [
                    ("bad-shape", None, "must have shape [N,28,28]"),
                    ("no-model", None, "unknown model"),
                ]
        for request_id, model, expected in sent:
            result, error = answers.get(timeout=60)  # the timeout only catches a hang
            if model is None:
                assert result is None and expected in error.message(), error
                continue
            assert error is None, error
            response = result.get_response()
            assert (response.id, response.model_name) == (request_id, model)
            assert result.as_numpy("digit").tolist() == [want[model]["digit"][expected]]
            assert np.allclose(result.as_numpy("probabilities")[0], want[model]["probabilities"][expected],
                               atol=1e-6)  # fmt: skip
            final = response.parameters.get("triton_final_response")
            assert (final is not None and final.bool_param) == (request_id == "r3")
    finally:
        client.stop_stream()
        client.close()
    samples = server.metrics()
    assert total(samples, "vit_digits_requests_total", route=STREAM, status="200") == len(images)
    assert total(samples, "vit_digits_requests_total", route=STREAM, status="400") == 1
    assert total(samples, "vit_digits_requests_total", route=STREAM, status="404") == 1


def test_a_stream_the_client_cancels_drops_its_queued_requests(start_server, digits):
    # 40 requests of 64 images on one stream, each computed as a batch of its own (~1 s in all on 2 cores):
    # a queue the client will not wait for
    server = start_server(workers=1, MAX_BATCH_SIZE="64", MAX_QUEUE_SIZE="4096", LARGE_SLOTS_PER_WORKER="64")
    images, _ = digits
    batch = np.resize(images, (64, 28, 28))
    client, answers = streaming_client(server)
    sent = 40 * len(batch)
    stream_batches(client, VIT, batch, 40)
    queued = queued_in_the_batcher(server, VIT, sent)
    assert queued > sent / 2, "the model computed the stream before the client left: test is not meaningful"
    client.stop_stream(cancel_requests=True)
    client.close()
    assert wait_for(lambda: total(server.metrics(), "vit_digits_pending_requests", model=VIT) == 0, 60)
    computed = total(server.metrics(), "vit_digits_inference_count", model=VIT)
    print(f"stream cancelled: {sent} images sent, {queued:.0f} queued then, {computed:.0f} computed")
    assert computed < sent - queued / 2, f"{computed:.0f} images computed for a stream that left"
    assert httpx.get(f"{server.url}/v2/health/ready").status_code == 200


def test_sigterm_answers_a_stream_then_ends_it_with_unavailable(start_server, digits):
    """What a stream holds is answered; then the stream ends with UNAVAILABLE (open a new one, elsewhere),
    instead of keeping the process alive for its whole grace period."""
    server = start_server(workers=1, MAX_BATCH_SIZE="1", MAX_QUEUE_SIZE="8192", SHUTDOWN_GRACE_S="600")
    images, _ = digits
    batch = np.resize(images, (64, 28, 28))
    client, answers = streaming_client(server)
    try:
        n = 8  # LARGE_SLOTS_PER_WORKER
        stream_batches(client, VIT, batch, n)
        assert queued_in_the_batcher(server, VIT, n * len(batch)) > 100, "drained before the signal"
        server.proc.send_signal(signal.SIGTERM)
        assert wait_for(lambda: not server_ready(server.grpc_target), 30)
        with contextlib.suppress(InferenceServerException):  # the stream may have ended already
            stream_batches(client, VIT, batch[:1], 20)  # sent while draining: not taken, not answered
        for _ in range(n):  # each answered (the timeout only catches a hang)
            result, error = answers.get(timeout=60)
            assert error is None, error
            assert len(result.as_numpy("digit")) == len(batch)
        result, error = answers.get(timeout=60)  # then the stream's end, not an error answer per request
        assert result is None and "shutting down" in error.message(), error
        assert error.status() == "StatusCode.UNAVAILABLE"
        assert server.proc.wait(timeout=120) == 0, server.log()  # not held for SHUTDOWN_GRACE_S (600 s)
    finally:
        client.stop_stream()
        client.close()


def test_a_stream_waits_for_room_instead_of_failing_its_requests(start_server, digits):
    """More batch requests on one stream than the worker has slots for (LARGE_SLOTS_PER_WORKER 2): the
    stream takes them as room frees up, so every one is answered (separate calls would get 503s)."""
    server = start_server(workers=1, LARGE_SLOTS_PER_WORKER="2")
    images, _ = digits
    client, answers = streaming_client(server)
    try:
        stream_batches(client, CNN, images[:2], 60)
        got = [answers.get(timeout=60) for _ in range(60)]  # the timeout only catches a hang
    finally:
        client.stop_stream()
        client.close()
    assert [error for _, error in got if error is not None] == []
    assert all(result.as_numpy("digit").shape == (2,) for result, _ in got)


def test_idle_streams_leave_room_for_calls_and_health_checks(start_server):
    """Streams stay open as long as their clients like: past MAX_CONNECTIONS / 2 of them (2 here) a new
    one is refused, and unary calls and health checks still get in."""
    server = start_server(workers=1, MAX_CONNECTIONS="4")
    with grpc.insecure_channel(server.grpc_target) as channel:
        watch = health_watch(channel)
        held = [watch(pb.HealthCheckRequest(), timeout=60) for _ in range(2)]
        assert all(next(w).status == pb.HealthCheckResponse.SERVING for w in held)
        with pytest.raises(grpc.RpcError) as caught:
            next(watch(pb.HealthCheckRequest(), timeout=60))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "open streams" in caught.value.details()
        assert dict(caught.value.trailing_metadata())["retry-after"] == "1"
        assert server_ready(server.grpc_target)
        check = unary(channel, pb.HEALTH, "Check")
        assert check(pb.HealthCheckRequest(), timeout=10).status == pb.HealthCheckResponse.SERVING
        for w in held:
            w.cancel()
