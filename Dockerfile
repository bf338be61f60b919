# vit-digits: the inference API (default target `runtime`) and the training image (target `train`).
#
#   docker build -t vit-digits:cuda .                                  # GPU (CUDA wheels from PyPI)
#   docker build -t vit-digits:cpu --build-arg TORCH_VARIANT=cpu .     # CPU-only wheels, GBs smaller
#   docker build -t vit-digits-train:cuda --target train .             # python -m training ...
#
# No CUDA base image is needed: the Linux x86_64 torch wheels on PyPI bundle the CUDA runtime, cuBLAS and
# cuDNN as pip packages (nvidia-*), so the host only needs the NVIDIA driver and the NVIDIA Container
# Toolkit. TORCH_VARIANT picks the wheel index: `cuda` = PyPI's default CUDA build; `cpu` (or a pinned
# `cu126`, `cu128`, ...) = https://download.pytorch.org/whl/<variant>.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------------
# Shared base: Python, the unprivileged user, environment. No compilers here or anywhere: every
# dependency installs from wheels.
FROM ${PYTHON_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home --shell /usr/sbin/nologin app

# ---------------------------------------------------------------------------------------------------
# Dependencies, in layers ordered by how rarely they change: torch (only the build args bust it), then
# the rest of pyproject.toml's dependencies (busted by pyproject.toml, never by code).
FROM base AS deps
ARG TORCH_VARIANT=cuda
ARG TORCH_VERSION=2.14.1
ARG TORCHVISION_VERSION=0.29.1
RUN python -m venv "$VIRTUAL_ENV" \
    && case "$TORCH_VARIANT" in \
        cuda) index=https://pypi.org/simple ;; \
        cpu|cu[0-9]*|rocm[0-9]*) index="https://download.pytorch.org/whl/$TORCH_VARIANT" ;; \
        *) echo "TORCH_VARIANT must be cuda, cpu, cuXYZ or rocmX.Y, not '$TORCH_VARIANT'" >&2; exit 1 ;; \
    esac \
    && pip install --no-cache-dir --index-url "$index" \
        "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" \
    && printf 'torch==%s\ntorchvision==%s\n' "$TORCH_VERSION" "$TORCHVISION_VERSION" > /opt/torch-constraints.txt
WORKDIR /build
COPY pyproject.toml ./
# The serving dependencies straight from [project].dependencies; the constraints keep the torch build
# chosen above (a plain `pip install .` could swap it for another one).
RUN python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print(*deps, sep='\n')" > requirements.txt \
    && pip install --no-cache-dir -r requirements.txt -c /opt/torch-constraints.txt

FROM deps AS train-deps
RUN python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['train']; print(*deps, sep='\n')" > requirements-train.txt \
    && pip install --no-cache-dir -r requirements-train.txt -c /opt/torch-constraints.txt

# ---------------------------------------------------------------------------------------------------
# Training image: `python -m training train --model vit-mnist ...` writes into $MODEL_STORE_DIR.
# /data (MNIST), /runs (resumable state) and /models are owned by the app user, so empty named volumes
# mounted there start out writable for it.
FROM base AS train
COPY --from=train-deps /opt/venv /opt/venv
WORKDIR /srv/vit-digits
COPY model_store/*.py model_store/
COPY training/ training/
COPY --chown=10001:10001 model_store/checkpoints/ /models/
RUN install -d -o app -g app /data /runs
ENV MODEL_STORE_DIR=/models \
    DATA_ROOT=/data \
    RUNS_DIR=/runs \
    MPLBACKEND=Agg
USER 10001:10001
ENTRYPOINT ["python", "-m", "training"]
CMD ["--help"]

# ---------------------------------------------------------------------------------------------------
# Inference image (default target): `python -m app` serves every model in the store on one device
# (HOST, PORT, GRPC_PORT and every other setting from the environment, app/settings.py); scale out
# with more containers, one per GPU.
FROM base AS runtime
COPY --from=deps /opt/venv /opt/venv
WORKDIR /srv/vit-digits
# Only the code the service imports; the checkpoints go to the model store path, not beside the code.
COPY model_store/*.py model_store/
COPY app/ app/
# The shipped checkpoints are the default store; mount another store over /models to serve others.
# Owned by the app user so that a named volume seeded from this directory is writable by `train`.
COPY --chown=10001:10001 model_store/checkpoints/ /models/
ENV MODEL_STORE_DIR=/models \
    DEVICE=auto
USER 10001:10001
EXPOSE 8000 8001
# Docker marks the container healthy once the models are loaded and warmed up (503 until then and
# while draining), so load balancers that follow Docker health (Traefik) only route to ready replicas.
# (podman keeps HEALTHCHECK only in Docker-format images: `podman build --format docker`.)
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/v2/health/ready', timeout=4).status != 200)"]
# SIGTERM drains: readiness turns 503, the front-end workers stop accepting and answer what they hold,
# then the engine answers what is left, each step within SHUTDOWN_GRACE_S + 5 s. Docker's default 10 s
# before SIGKILL is too short: use `docker stop -t 40` / `docker run --stop-timeout 40` (compose sets
# stop_grace_period: 40s). The app writes only to /tmp (its sockets, Prometheus multiprocess files) and
# /dev/shm, so it runs with a read-only root filesystem (--read-only --tmpfs /tmp).
STOPSIGNAL SIGTERM
CMD ["python", "-m", "app"]
