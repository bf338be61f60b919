"""The descriptor the gRPC server loads is its .proto compiled (``make proto``), and it serves the
protocol's wire contract: the service and method paths, and the field numbers of the inference
messages that tritonclient's own copy of the protocol uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from app.oip_grpc import messages as pb

HERE = Path(pb.__file__).parent
PROTOS = ("inference.proto", "health.proto")  # as make proto compiles them


def test_the_descriptor_is_the_proto_compiled(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    out = tmp_path / "services.desc"
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I.", f"--descriptor_set_out={out}", *PROTOS],
        cwd=HERE, check=True,
    )  # fmt: skip
    compiled = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    shipped = descriptor_pb2.FileDescriptorSet.FromString(pb.DESCRIPTOR_SET.read_bytes())
    assert compiled == shipped, "app/oip_grpc/*.proto changed: run `make proto`"


def test_the_messages_match_tritonclients_copy_of_the_protocol() -> None:
    service_pb2 = pytest.importorskip("tritonclient.grpc.service_pb2")
    theirs = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    ours = pb.POOL.FindServiceByName(pb.SERVICE)
    assert ours.full_name == theirs.full_name
    for method in ours.methods:
        other = theirs.methods_by_name[method.name]
        for mine, their in ((method.input_type, other.input_type), (method.output_type, other.output_type)):
            _same_fields(mine, their)


def _same_fields(mine, their) -> None:  # type: ignore[no-untyped-def]
    """Every field of ours has their number and type (theirs may have more: Triton's extensions)."""
    for field in mine.fields:
        other = their.fields_by_name[field.name]
        assert (field.number, field.type, _repeated(field)) == (other.number, other.type, _repeated(other)), (
            field.full_name
        )
        if field.message_type is not None and not field.message_type.GetOptions().map_entry:
            _same_fields(field.message_type, other.message_type)
        if field.enum_type is not None:
            theirs = {v.name: v.number for v in other.enum_type.values}
            ours = {v.name: v.number for v in field.enum_type.values}
            assert ours.items() <= theirs.items(), field.full_name


def _repeated(field) -> bool:  # type: ignore[no-untyped-def]
    if hasattr(field, "is_repeated"):  # protobuf 6.31+ (``label`` went in 7)
        return field.is_repeated
    return field.label == field.LABEL_REPEATED
