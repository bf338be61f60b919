"""The protocol's message classes, built from ``inference.desc`` (``inference.proto`` compiled by
``make proto``) in a descriptor pool of their own: nothing generated to import, no protobuf version
pinned by generated code, and no clash with a client's own copy of the same ``inference`` package in
the default pool (tritonclient's, in one process with a test's server)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DESCRIPTOR_SET = Path(__file__).with_name("inference.desc")
SERVICE = "inference.GRPCInferenceService"

_pool = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes()).file:
    _pool.Add(_file)


def _message(name: str) -> type:
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"inference.{name}"))


ServerLiveRequest = _message("ServerLiveRequest")
ServerLiveResponse = _message("ServerLiveResponse")
ServerReadyRequest = _message("ServerReadyRequest")
ServerReadyResponse = _message("ServerReadyResponse")
ModelReadyRequest = _message("ModelReadyRequest")
ModelReadyResponse = _message("ModelReadyResponse")
ServerMetadataRequest = _message("ServerMetadataRequest")
ServerMetadataResponse = _message("ServerMetadataResponse")
ModelMetadataRequest = _message("ModelMetadataRequest")
ModelMetadataResponse = _message("ModelMetadataResponse")
ModelInferRequest = _message("ModelInferRequest")
ModelInferResponse = _message("ModelInferResponse")

# method -> (request class, response class), as the service declares them
METHODS: dict[str, tuple[type, type]] = {
    method.name: (_message(method.input_type.name), _message(method.output_type.name))
    for method in _pool.FindServiceByName(SERVICE).methods
}
