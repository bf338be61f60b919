"""The message classes of the services on the gRPC port, built from ``services.desc`` (``inference.proto``
and ``health.proto`` compiled by ``make proto``) in a descriptor pool of their own: nothing generated to
import, no protobuf version pinned by generated code, and no clash with a client's own copy of the same
packages in the default pool (tritonclient's ``inference``, in one process with a test's server)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DESCRIPTOR_SET = Path(__file__).with_name("services.desc")
SERVICE = "inference.GRPCInferenceService"  # the Open Inference Protocol
HEALTH = "grpc.health.v1.Health"  # gRPC's standard health checks

POOL = descriptor_pool.DescriptorPool()  # also what server reflection describes
for _file in descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes()).file:
    POOL.Add(_file)


def _message(full_name: str) -> type:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


def _methods(service: str) -> dict[str, tuple[type, type]]:
    """method -> (request class, response class), as the service declares them."""
    return {
        method.name: (_message(method.input_type.full_name), _message(method.output_type.full_name))
        for method in POOL.FindServiceByName(service).methods
    }


ServerLiveRequest = _message("inference.ServerLiveRequest")
ServerLiveResponse = _message("inference.ServerLiveResponse")
ServerReadyRequest = _message("inference.ServerReadyRequest")
ServerReadyResponse = _message("inference.ServerReadyResponse")
ModelReadyRequest = _message("inference.ModelReadyRequest")
ModelReadyResponse = _message("inference.ModelReadyResponse")
ServerMetadataRequest = _message("inference.ServerMetadataRequest")
ServerMetadataResponse = _message("inference.ServerMetadataResponse")
ModelMetadataRequest = _message("inference.ModelMetadataRequest")
ModelMetadataResponse = _message("inference.ModelMetadataResponse")
ModelInferRequest = _message("inference.ModelInferRequest")
ModelInferResponse = _message("inference.ModelInferResponse")
ModelStreamInferResponse = _message("inference.ModelStreamInferResponse")
ModelConfig = _message("inference.ModelConfig")
ModelConfigResponse = _message("inference.ModelConfigResponse")
ModelStatisticsResponse = _message("inference.ModelStatisticsResponse")
RepositoryIndexResponse = _message("inference.RepositoryIndexResponse")
HealthCheckRequest = _message("grpc.health.v1.HealthCheckRequest")
HealthCheckResponse = _message("grpc.health.v1.HealthCheckResponse")

METHODS = _methods(SERVICE)
HEALTH_METHODS = _methods(HEALTH)
