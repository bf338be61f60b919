# Every target sets itself up on a fresh machine: the venv is created and filled on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 0.0.0.0
PORT ?= 8000
# MNIST lives beside the checkout in this workplace; elsewhere torchvision downloads it into data/.
DATA_ROOT ?= $(if $(wildcard ../shared/data/MNIST/raw),../shared/data,data)
export DATA_ROOT

.PHONY: run test lint proto image-test train bench bench-peers bench-peers-x2 clean help

help:
	@echo "make run    serve the shipped checkpoints on http://$(HOST):$(PORT)"
	@echo "make test   run the test suite (installs dev dependencies; browser tests skip without Chromium)"
	@echo "make lint   ruff + hadolint + shellcheck + docker-compose config + Kubernetes manifests (offline schemas)"
	@echo "make proto  recompile app/oip_grpc/inference.proto after editing it"
	@echo "make image-test  build the runtime image with podman and run it (downloads GBs; not in make test)"
	@echo "make train  train vit-mnist and cnn-mnist into model_store/checkpoints"
	@echo "make bench  benchmarks: raw model, served load, batch endpoint, cold start, worker sweep, gRPC, perf_analyzer"
	@echo "make bench-peers  the same model served by LitServe and Triton, side by side (../shared/peers)"
	@echo "make bench-peers-x2  the same with two model instances per peer (scripts/peers_instances.sh)"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

run: $(VENV)/.installed
	HOST=$(HOST) PORT=$(PORT) $(PY) -m app

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q -ra

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint Dockerfile
	$(VENV)/bin/shellcheck --severity=warning scripts/*.sh .ci/run
	for f in docker-compose.yml docker-compose.cpu.yml; do \
	  $(VENV)/bin/docker-compose -f $$f --profile train config -q || exit 1; done
	$(PY) scripts/kube_render.py --validate deploy/kubernetes/overlays/gpu deploy/kubernetes/overlays/cpu

# The gRPC services' messages: app/oip_grpc/*.proto compiled into the descriptor set the server loads
# (tests/app/test_grpc_proto.py fails when they differ).
proto: $(VENV)/.installed-dev
	cd app/oip_grpc && ../../$(PY) -m grpc_tools.protoc -I. --descriptor_set_out=services.desc inference.proto health.proto

# Build the runtime image with podman (scripts/podman.sh: a local Debian base, no registry needed) and
# run it: healthy, predicts, /v2 via tritonclient, drains on SIGTERM; then the same through compose.
# IMAGE_VARIANT=cpu needs download.pytorch.org; CONTEXT_REV=HEAD builds the committed app code.
IMAGE_VARIANT ?= cuda
image-test: $(VENV)/.installed-dev
	TORCH_VARIANT=$(IMAGE_VARIANT) TAG=localhost/vit-digits:$(IMAGE_VARIANT) scripts/podman.sh all
	$(PY) scripts/image_test.py --image localhost/vit-digits:$(IMAGE_VARIANT)

train: $(VENV)/.installed-dev
	# from scratch, over the shipped checkpoints (--replace), then refined in place (--init-from them)
	$(PY) -m training train --model vit-mnist --epochs 200 --batch-size 512 --warmup-epochs 5 --replace
	$(PY) -m training train --model cnn-mnist --epochs 60 --batch-size 256 --lr 2e-3 --replace
	# then 8 epochs with 10,000 generated digits added (continental 1s and 7s, displays, ...; training/pen_digits.py)
	$(PY) -m training train --model vit-mnist --init-from $${MODEL_STORE_DIR:-model_store/checkpoints}/vit-mnist --pen-digits 10000 \
		--epochs 8 --lr 2e-4 --warmup-epochs 0.5
	$(PY) -m training train --model cnn-mnist --init-from $${MODEL_STORE_DIR:-model_store/checkpoints}/cnn-mnist --pen-digits 10000 \
		--epochs 8 --lr 4e-4 --warmup-epochs 0.5
	# then the ViT distilled from that CNN, with stochastic depth and elastic distortion (4 min on an H200)
	$(PY) -m training train --model vit-mnist --init-from $${MODEL_STORE_DIR:-model_store/checkpoints}/vit-mnist \
		--teacher $${MODEL_STORE_DIR:-model_store/checkpoints}/cnn-mnist --pen-digits 10000 --epochs 70 \
		--batch-size 512 --lr 3e-4 --warmup-epochs 2 --set drop_path=0.1 --elastic-alpha 34
	$(PY) -m training compare

bench: $(VENV)/.installed-dev
	$(PY) -m bench
	$(PY) -m bench.scaling
	$(PY) -m bench.grpc
	$(PY) -m bench.perf_analyzer

# Side by side with LitServe and Triton on the same model (../shared/peers; its own venv, ~5 GB once).
# Each run is appended to bench/results/peers.txt under a dated header: only ratios within one run compare.
PEERS ?= ../shared/peers
PEERS_VENV ?= $(abspath .peers-venv)
bench-peers: $(VENV)/.installed
	PEERS_VENV=$(PEERS_VENV) $(PEERS)/setup.sh
	{ echo "--- $$(date -u '+%F %H:%M') UTC, commit $$(git rev-parse --short HEAD)"; \
	  PEERS_VENV=$(PEERS_VENV) $(PEERS_VENV)/bin/python $(PEERS)/run.py --project .; } | tee -a bench/results/peers.txt

# The same with two model instances per peer (scripts/peers_instances.sh), as our lanes use a second core.
bench-peers-x2: $(VENV)/.installed
	PEERS_VENV=$(PEERS_VENV) $(PEERS)/setup.sh
	PEERS=$(PEERS) PEERS_VENV=$(PEERS_VENV) bash scripts/peers_instances.sh | tee -a bench/results/peers.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache runs
