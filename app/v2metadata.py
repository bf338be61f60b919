"""Open Inference Protocol v2: what the server says of itself and its models, whichever wire asks (REST
in ``app.routes.v2``, gRPC in ``app.oip_grpc``): server and model metadata, Triton's model configuration
extension and its model repository index. The tensors themselves are ``app.v2codec``'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import __version__
from .v2codec import BYTES_INPUT, INPUT_NAME, OUTPUTS

if TYPE_CHECKING:
    from .runtime import ServedModel
    from .settings import Settings

# Models come from the store at start: Triton's explicit load and unload are refused with this reason.
NO_LOADING = "models are loaded from the store at start (MODEL_STORE_DIR); restart the service to change them"

# Triton's extensions this server implements, as Triton names them.
EXTENSIONS = ["binary_tensor_data", "model_configuration", "statistics"]
SERVER_METADATA = {"name": "vit-digits", "version": __version__, "extensions": EXTENSIONS}
CONFIG_TYPES = {"UINT8": "TYPE_UINT8", "FP32": "TYPE_FP32", "INT64": "TYPE_INT64", "BOOL": "TYPE_BOOL",
                "BYTES": "TYPE_STRING"}  # fmt: skip


def model_metadata(served: ServedModel) -> dict[str, Any]:
    """A model's metadata: the inputs it takes and every output ``output_tensors`` can return.

    One entry per input name, as tools that read it expect (perf_analyzer keys inputs by name): ``image``
    is listed as UINT8 [-1, 28, 28] and takes FP32 [-1, 1, 28, 28] as well; ``image_bytes`` is listed as
    [-1, 1], Triton's form for one value per batch item, and takes [-1] as well."""
    name, arch, classes = served.name, served.card.arch, len(served.card.labels)
    return {
        "name": name,
        "versions": ["1"],
        "platform": f"pytorch_{arch}",
        "inputs": [
            {"name": INPUT_NAME, "datatype": "UINT8", "shape": [-1, 28, 28]},
            {"name": BYTES_INPUT, "datatype": "BYTES", "shape": [-1, 1]},
        ],
        "outputs": [
            {"name": out, "datatype": datatype, "shape": [-1, classes] if out == "probabilities" else [-1]}
            for out, datatype in OUTPUTS.items()
        ],
    }


def model_config(served: ServedModel, settings: Settings) -> dict[str, Any]:
    """A model's configuration in Triton's ModelConfig schema (the model configuration extension), so
    that tools that read it (perf_analyzer, Model Analyzer, tritonclient's ``get_model_config``) work.

    ``max_batch_size`` is what one request may carry (MAX_BATCH_IMAGES); dims leave out that batch
    dimension, as the metadata's shapes are without their leading -1. ``image`` and ``image_bytes`` are
    both optional: a request sends one of them. The outputs of one value per image have Triton's form
    for a model that computes [N], dims [1] with ``reshape: {shape: []}``; they are answered as [N], the
    metadata's shape.
    """
    name, arch, classes = served.name, served.card.arch, len(served.card.labels)
    scalar = {"dims": [1], "reshape": {"shape": []}}
    outputs = [
        {"name": out, "data_type": CONFIG_TYPES[kind]}
        | ({"dims": [classes]} if out == "probabilities" else scalar)
        for out, kind in OUTPUTS.items()
    ]
    return {
        "name": name,
        "platform": f"pytorch_{arch}",
        "backend": "vit-digits",
        "max_batch_size": settings.max_batch_images,
        "input": [
            {"name": INPUT_NAME, "data_type": "TYPE_UINT8", "dims": [28, 28], "optional": True},
            {"name": BYTES_INPUT, "data_type": "TYPE_STRING", "dims": [1], "optional": True},
        ],
        "output": outputs,
        "dynamic_batching": {
            "preferred_batch_size": [settings.max_batch_size],
            "max_queue_delay_microseconds": round(settings.max_wait_ms * 1000),
        },
        "instance_group": [
            {"name": name, "kind": "KIND_GPU" if served.device.startswith("cuda") else "KIND_CPU", "count": 1}
        ],
    }


def repository_index(
    names: Iterable[str], ready: bool, reason: str, ready_only: bool
) -> list[dict[str, str]]:
    """Triton's model repository index: every model the service serves (there is one version), READY
    when the service is, else UNAVAILABLE with the reason; ``ready_only`` leaves the others out."""
    state = {"state": "READY"} if ready else {"state": "UNAVAILABLE", "reason": reason}
    return [] if ready_only and not ready else [{"name": name, "version": "1", **state} for name in names]
