"""CUDA graphs for the predict path: one captured graph per bucketed batch size.

A small model on a big GPU is launch-bound: the ViT's forward is ~100 kernel launches that take
longer to issue than to run. A replayed graph issues them as one. Inputs go through a pinned host
buffer and a non-blocking copy into the graph's static input; a batch is padded up to the next
bucket (rows are independent in eval mode, so padding never changes the real rows' answers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import torch

log = logging.getLogger(__name__)


def buckets(max_batch_size: int) -> list[int]:
    """1, 2, 4, ... up to max_batch_size (which is always one of them)."""
    sizes, b = [], 1
    while b < max_batch_size:
        sizes.append(b)
        b *= 2
    return [*sizes, max_batch_size]


class GraphRunner:
    def __init__(self, sizes: list[int], static_in: torch.Tensor, outputs: dict[int, torch.Tensor],
                 graphs: dict[int, torch.cuda.CUDAGraph], device: torch.device) -> None:  # fmt: skip
        self.sizes = sizes
        self.static_in = static_in
        self.outputs = outputs
        self.graphs = graphs
        self.device = device
        self.host_in = torch.empty(static_in.shape, dtype=torch.float32, pin_memory=True)
        width = outputs[sizes[-1]].shape[1]
        self.host_out = torch.empty((sizes[-1], width), dtype=torch.float32, pin_memory=True)

    @classmethod
    def build(
        cls,
        forward: Callable[[torch.Tensor], torch.Tensor],
        device: torch.device,
        max_batch_size: int,
        side: int,
    ) -> GraphRunner | None:
        """Capture one graph per bucket (largest first, sharing one memory pool); None on failure."""
        sizes = buckets(max_batch_size)
        try:
            with torch.inference_mode():
                static_in = torch.zeros((sizes[-1], 1, side, side), device=device)
                stream = torch.cuda.Stream(device)
                stream.wait_stream(torch.cuda.current_stream(device))
                with torch.cuda.stream(stream):
                    for b in sizes:  # warm-up outside capture: cuBLAS/cuDNN pick their kernels
                        forward(static_in[:b])
                torch.cuda.current_stream(device).wait_stream(stream)
                pool = torch.cuda.graph_pool_handle()
                graphs, outputs = {}, {}
                for b in reversed(sizes):
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool):
                        outputs[b] = forward(static_in[:b])
                    graphs[b] = graph
                torch.cuda.synchronize(device)
        except Exception as exc:  # graphs are an optimisation, never a reason not to serve
            log.warning("CUDA graph capture failed (%r): serving this model eagerly", exc)
            return None
        return cls(sizes, static_in, outputs, graphs, device)

    def run(self, views: list[np.ndarray]) -> np.ndarray:
        total = sum(len(v) for v in views)
        out = np.empty((total, self.host_out.shape[1]), dtype=np.float32)
        pending = list(views)
        row = 0
        while pending:
            # Fill the pinned buffer with up to the largest bucket's worth of images.
            chunk: list[np.ndarray] = []
            n = 0
            while pending and n + len(pending[0]) <= self.sizes[-1]:
                chunk.append(pending.pop(0))
                n += len(chunk[-1])
            if not chunk:  # one view larger than the largest bucket: split it
                head, rest = pending[0][: self.sizes[-1]], pending[0][self.sizes[-1] :]
                pending[0] = rest
                chunk, n = [head], len(head)
            host = self.host_in.numpy()
            np.concatenate(chunk, out=host[:n, 0]) if len(chunk) > 1 else np.copyto(host[:n, 0], chunk[0])
            b = next(s for s in self.sizes if s >= n)
            self.static_in[:n].copy_(self.host_in[:n], non_blocking=True)
            self.graphs[b].replay()
            self.host_out[:n].copy_(self.outputs[b][:n], non_blocking=True)
            torch.cuda.current_stream(self.device).synchronize()
            out[row : row + n] = self.host_out[:n].numpy()
            row += n
        return out
