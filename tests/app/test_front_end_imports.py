"""Front-end workers never import torch: they read, decode and describe, the engine computes. Each
worker would otherwise carry torch's ~350 MB (PSS) for nothing, times WORKERS."""

from __future__ import annotations

import subprocess
import sys


def test_a_worker_process_does_not_import_torch():
    code = (
        "import sys, app.worker, app.main, app.routes.read, app.pipeline, model_store\n"
        "model_store.ModelCard, model_store.DEFAULT_STORE_DIR\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))[:5]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_loading_a_model_still_imports_what_it_needs():
    code = "import sys, model_store\nmodel_store.ModelStore, model_store.ViT\nassert 'torch' in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
